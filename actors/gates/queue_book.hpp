#pragma once

// One Queue's admission, kept by change (#60). plan_queue (model.hpp) judges a Queue from all its
// pods at once, so at 5,000 pending every pod event cost a pass over 5,000 pods and a sort. The
// book holds what that pass would find, each pod booked by its standing (bound, reserved, expired,
// waiting at our gate, held by other gates) into the Queue's tallies, the waiting pods in
// admission order, the reservations by expiry; a change re-books one pod in O(log n).
//
// A plan then walks only what may admit something:
//   - room opened (a pod gone or finished, a reservation expired, a gang changed) or StrictFIFO:
//     the waiting pods from the front, until the smallest request of any waiting pod no longer
//     fits (so a full Queue costs one comparison), or, StrictFIFO, the first unit that waits;
//   - otherwise only the pods that arrived since the last plan: the ones already there did not
//     fit before, and the room has only shrunk since.
// Conditions are levels of each pod's own standing, so only the pods whose standing changed are
// looked at. plan_queue stays the definition: queue_book_test replays random histories through
// both and compares them after every step.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "actors/gates/model.hpp"

namespace headroom::actors::gates {

class queue_book {
 public:
  explicit queue_book(queue_rules rules);

  const queue_rules& rules() const { return rules_; }
  size_t pods() const { return pods_.size(); }

  // The pod as the informer cache holds it now, or nullptr when it is gone (or left the Queue).
  // `flying`: its ungating was sent and the cache does not show it yet (it holds room, no expiry).
  void put(const std::string& key, std::shared_ptr<const k8s::pod> p, bool flying, wall_time now);

  // What to do now: the pods to ungate, in order (booked as flying from here on); the conditions
  // of the pods whose standing changed since the last plan, where the pod's own differs; the
  // reservations that expired since; the next expiry; the status. `full` judges every waiting pod
  // and looks at every condition again (the controller's resync).
  queue_plan plan(wall_time now, bool full = false);

  // What the pod's condition should say, if the pod's own says otherwise (a write held back by the
  // controller's bulk limit is made from this when its turn comes).
  std::optional<condition_write> condition_of(const std::string& key) const;

 private:
  enum class standing { none, allocated, reserved, expired, other_gated, candidate };
  // Admission order: highest priority, then the oldest (one without a time first), then by name.
  using order_key = std::tuple<int64_t, std::optional<double>, std::string>;
  struct entry {
    std::shared_ptr<const k8s::pod> pod;
    standing st = standing::none;
    bool flying = false;
    std::vector<int64_t> amounts;  // per capacity entry
    std::optional<wall_time> expiry;
    std::optional<detail::gang_of> gang;
    order_key order;
  };
  struct walk_result {
    std::vector<std::string> admitted;  // in order
  };

  entry make_entry(std::shared_ptr<const k8s::pod> p, bool flying, wall_time now) const;
  void book(const std::string& key, const entry& e);
  void unbook(const std::string& key, const entry& e);
  void gang_changed(const std::string& gang_key);
  std::vector<int64_t> used() const;
  std::vector<int64_t> amounts_of(const std::set<order_key>& members) const;
  walk_result walk(bool from_front) const;
  void admit(const std::string& key, queue_plan& plan);

  queue_rules rules_;
  std::unordered_map<std::string, entry> pods_;
  std::vector<int64_t> allocated_, reserved_, waiting_;
  int64_t admitted_pods_ = 0, reserved_pods_ = 0, gated_pods_ = 0;
  std::set<order_key> candidates_;
  std::vector<std::multiset<int64_t>> needs_;  // per capacity entry: the waiting pods' amounts
  std::set<std::pair<wall_time, std::string>> expiries_;
  std::map<std::string, int64_t> gang_admitted_;           // gang key → members bound or reserved
  std::map<std::string, std::set<order_key>> gang_waiting_;  // gang key → its members at our gate
  std::set<std::string> touched_;  // pods whose condition to look at in the next plan
  std::vector<std::string> expired_;  // reservations expired since the last plan
  bool room_opened_ = true;  // the next plan walks from the front
  std::set<order_key> arrived_;  // waiting pods new or changed since the last plan
};

}  // namespace headroom::actors::gates
