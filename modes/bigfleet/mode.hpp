#pragma once

// The BigFleet operator (seed 004): roll-ups over one outbound stream to a shard, reclaim drains,
// one CapacityRequest per Pod.
//
//   acting (leader only) ── bigfleet ── rollup, shard_session (── reclaim_drain × M), capacity_requests

#include <memory>
#include <optional>
#include <string>

#include "actors/bigfleet/bigfleet.hpp"
#include "modes/bigfleet/settings.hpp"
#include "modes/mode.hpp"

namespace headroom::modes::bigfleet {

// The informers and send queue its actors share, and their options (files read at start-up).
struct bigfleet_services {
  actors::bigfleet::operator_deps deps;
  actors::bigfleet::operator_options opts;
  void stop();
};

class bigfleet_mode final : public mode {
 public:
  bigfleet_section config;

  std::string_view name() const override { return "bigfleet"; }
  std::string_view summary() const override { return "the BigFleet operator"; }
  std::vector<std::string> keys() const override { return {"bigfleet"}; }
  void read(const std::string& key, const YAML::Node& node) override;
  bool enabled() const override { return config.enabled; }
  std::string_view switch_key() const override { return "bigfleet.enabled"; }
  std::optional<start_problem> prepare(const services& s) override;
  std::optional<runtime::child_spec> leader_only(const runtime::config& cfg, runtime::metrics& m, runtime::readiness& ready) override;
  void stop() override;
  std::vector<tree_line> leader_only_tree() const override;

 private:
  std::shared_ptr<bigfleet_services> svc_;
};

std::unique_ptr<mode> make();

}  // namespace headroom::modes::bigfleet
