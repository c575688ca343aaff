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

// Several clusters on one queue (`hud.share`): cluster `index` of `count` counts its share of
// each count of queued jobs, so N clusters sharing labels make pairs for the queue once, not N
// times. A job still queued `take_all_after` later is any cluster's (the design's production users
// shard the queue the same way: each cluster its share, an old job to whoever can run it).
struct queue_share {
  uint32_t index = 0, count = 1;
  double take_all_after_minutes = 0;  // 0: never
};

// This cluster's part of n jobs: n / count, and one of the remainder n % count, handed out from
// the cluster `rotation` % count onwards. Summed over the clusters, n exactly.
int64_t share_of(int64_t n, uint64_t rotation, const queue_share& s);

// A stable 64-bit hash (FNV-1a): the same key rotates the remainder the same way on every cluster.
uint64_t rotation_of(std::string_view key);

// Jobs queued for any of a scale set's labels (each row counted once), this cluster's share of
// each row: the remainder rotated by the row (label, org, repo); a row whose jobs have all waited
// take_all_after counts whole, one with an older job than that counts one more.
int64_t queued_for_labels(const std::vector<queued_jobs>& rows, const std::vector<std::string>& labels,
                          const queue_share& share = {});

}  // namespace headroom::hud
