#pragma once

// The HUD's queued-jobs aggregate: [{runner_label, org, repo, num_queued_jobs,
// min_queue_time_minutes, max_queue_time_minutes}]. A failure is a value: the caller falls back
// to proactiveCapacity alone.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace headroom::hud {

struct queued_jobs {
  std::string runner_label, org, repo;
  int64_t num_queued_jobs = 0;
  double min_queue_time_minutes = 0, max_queue_time_minutes = 0;
};

struct hud_error {
  std::string message;
};

std::variant<std::vector<queued_jobs>, hud_error> decode_queued_jobs(std::string_view json);

// Jobs queued for any of a scale set's labels (each row counted once).
int64_t queued_for_labels(const std::vector<queued_jobs>& rows, const std::vector<std::string>& labels);

}  // namespace headroom::hud
