#include "adapters/hud/queued_jobs.hpp"

#include <simdjson.h>

#include <algorithm>

namespace headroom::hud {

std::variant<std::vector<queued_jobs>, hud_error> decode_queued_jobs(std::string_view json) {
  std::vector<queued_jobs> out;
  size_t index = 0;
  std::string field = "(top level)";
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded{json};
    auto doc = parser.iterate(padded);
    for (auto item : doc.get_array()) {
      queued_jobs q;
      for (auto f : item.get_object()) {
        std::string_view key = f.unescaped_key();
        field = std::string{key};
        auto v = f.value();
        if (key == "runner_label")
          q.runner_label = std::string{std::string_view{v.get_string()}};
        else if (key == "org")
          q.org = std::string{std::string_view{v.get_string()}};
        else if (key == "repo")
          q.repo = std::string{std::string_view{v.get_string()}};
        else if (key == "num_queued_jobs")
          q.num_queued_jobs = v.get_int64();
        else if (key == "min_queue_time_minutes")
          q.min_queue_time_minutes = v.get_double();
        else if (key == "max_queue_time_minutes")
          q.max_queue_time_minutes = v.get_double();
      }
      if (q.num_queued_jobs < 0)
        return hud_error{"HUD queued jobs: [" + std::to_string(index) + "].num_queued_jobs is negative"};
      out.push_back(std::move(q));
      ++index;
      field = "(item)";
    }
  } catch (const simdjson::simdjson_error& e) {
    return hud_error{"HUD queued jobs: [" + std::to_string(index) + "]." + field + ": " + simdjson::error_message(e.error())};
  }
  return out;
}

uint64_t rotation_of(std::string_view key) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : key)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

int64_t share_of(int64_t n, uint64_t rotation, const queue_share& s) {
  if (n <= 0)
    return 0;
  if (s.count <= 1)
    return n;
  const int64_t count = s.count;
  const int64_t first = static_cast<int64_t>(rotation % s.count);  // the cluster the remainder starts at
  const int64_t place = (static_cast<int64_t>(s.index) - first + count) % count;
  return n / count + (place < n % count ? 1 : 0);
}

int64_t queued_for_labels(const std::vector<queued_jobs>& rows, const std::vector<std::string>& labels, const queue_share& share) {
  int64_t total = 0;
  const bool ages = share.count > 1 && share.take_all_after_minutes > 0;
  for (const auto& r : rows) {
    if (std::find(labels.begin(), labels.end(), r.runner_label) == labels.end() || r.num_queued_jobs <= 0)
      continue;
    if (ages && r.min_queue_time_minutes >= share.take_all_after_minutes) {
      total += r.num_queued_jobs;  // every job here has waited long enough: anyone's
      continue;
    }
    int64_t mine = share_of(r.num_queued_jobs, rotation_of(r.runner_label + '\n' + r.org + '\n' + r.repo), share);
    if (ages && r.max_queue_time_minutes >= share.take_all_after_minutes)
      mine = std::min(r.num_queued_jobs, mine + 1);  // at least its oldest job is anyone's
    total += mine;
  }
  return total;
}

}  // namespace headroom::hud
