#pragma once

// Webhook intake of the scheduler (seed 003): one GitHub delivery in, one HTTP answer out. The
// answer is 202 only once the delivery is durable in the store; anything else writes nothing.
//
//   413  the body is over the limit                      (before anything is read)
//   401  X-Hub-Signature-256 missing or wrong              (checked in constant time)
//   400  no X-GitHub-Delivery, or a malformed workflow_job (the message names the field)
//   202  recorded; or a redelivery (recorded before);  or ignored: another event type, an
//        action the scheduler does not track (waiting), a ping; or unmatched: a job for runners
//        that are not the scheduler's (GitHub-hosted, another system's), recorded as history only
//   503  the store could not commit it (GitHub can redeliver it)
//
// Pure but for the store call: the intake actor (which owns the HTTP route) calls it from its
// own thread.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/store/store.hpp"

namespace headroom::actors::scheduler {

struct delivery {
  std::string event;      // X-GitHub-Event
  std::string id;         // X-GitHub-Delivery
  std::string signature;  // X-Hub-Signature-256
  std::string body;
  int64_t received_ms = 0;
};

struct intake_answer {
  int status = 202;
  std::string message;  // for the response body and the log; never holds the secret
  const char* outcome = "recorded";  // recorded, duplicate, unchanged, ignored, unmatched, too_large, bad_signature, malformed, store_error
};

struct intake_limits {
  size_t max_body = 1 << 20;  // GitHub caps payloads at 25 MB; a workflow_job is a few KB
  // Each runner pool's labels (see serves()): a job no pool serves is unmatched. None: one pool
  // without labels (every job asking for self-hosted).
  std::vector<std::vector<std::string>> pools;
  // When given ("owner/repo", any case): an organization's job from another repository is
  // unmatched (the runner group is restricted to these).
  std::vector<std::string> repositories;
};

// Whether a job asking for `job_labels` is the scheduler's: with `runner_labels`, GitHub's rule (a
// runner takes a job when it has every label the job asks for; `self-hosted` is every self-hosted
// runner's); without, every job that asks for `self-hosted`. Case-insensitive, as GitHub's.
// A job it does not serve (ubuntu-latest, another runner system's) is answered 202 "unmatched" and
// recorded with status unmatched: history (/history shows it), never demand, and no runner. With pools, a job is the scheduler's when a
// pool serves it.
bool serves(const std::vector<std::string>& runner_labels, const std::vector<std::string>& job_labels);

intake_answer take_delivery(const delivery& d, std::string_view secret, store::store& jobs, const intake_limits& limits = {});

// The store's job for a decoded event: entity (organization, else the repository), labels sorted
// and comma-joined, the status the action moves it to.
std::string labels_key(std::vector<std::string> labels);

}  // namespace headroom::actors::scheduler
