#pragma once

// Reads many actors make alike, made once. At start-up every scale set's capacity monitor reads the
// same four PriorityClasses and lists its namespace's owner ConfigMaps to find its own: at 1,000
// scale sets, 5,000 of the 7,000 calls a warm restart made at the client's 50 a second
// (many_scale_sets_bench --restart). Here whoever asks while a read is in flight gets that read's
// answer, and a successful answer is given again for `reuse` after it came; a failed one is not
// kept (the next asker reads again).
//
// Thread-safe: actors ask from their threads, answers come on the client's I/O thread, and each
// asker's callback runs there (as a client callback does).

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/k8s/client.hpp"

namespace headroom::k8s {

// Made with std::make_shared: a read in flight keeps it alive until its answer is given.
class shared_reads : public std::enable_shared_from_this<shared_reads> {
 public:
  explicit shared_reads(client& c, std::chrono::milliseconds reuse = std::chrono::seconds(30)) : client_(c), reuse_(reuse) {}
  shared_reads(const shared_reads&) = delete;
  shared_reads& operator=(const shared_reads&) = delete;

  // One object: the answer a GET of it would give.
  void get(const resource_kind& k, const std::string& ns, const std::string& name, api_callback cb);

  // One object found in a LIST (`selector`): answered as a GET of it would be - its metadata.name
  // and metadata.uid, or not_found when the list does not hold it - so a thousand askers share one
  // list without each being handed (and parsing) all of it. A failed list is each asker's failure.
  void find_in_list(const resource_kind& k, const std::string& ns, const std::string& selector, const std::string& name,
                    api_callback cb);

  // How many requests this made, and how many answers it gave (tests, the bench).
  struct counts {
    uint64_t requests = 0, answers = 0;
  };
  counts counted() const;

 private:
  using answer_fn = std::function<void(const api_result&)>;
  struct entry {
    bool in_flight = false;
    std::vector<answer_fn> waiting;
    std::optional<api_result> kept;  // a success, until `kept_at + reuse`
    runtime::clock::time_point kept_at{};
  };
  // Answers `answer` from the entry at `key` (kept or in flight) or issues `read` for it.
  void ask(const std::string& key, std::function<void(api_callback)> read, answer_fn answer);

  client& client_;
  std::chrono::milliseconds reuse_;
  mutable std::mutex mutex_;
  std::map<std::string, entry> entries_;
  counts counts_;
};

}  // namespace headroom::k8s
