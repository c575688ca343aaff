// libFuzzer: the GitHub-side decoders never crash on hostile input and always explain a failure.
// HEADROOM_FUZZ_KIND selects: 1 poll message (with its encoded body), 2 statistics, 3 HUD,
// 4 what GitHub sends (a workflow_job webhook, with signature verification of the same bytes; the
// App webhook's delivery list and its Link header), 5 every Actions
// Service object (scale sets, groups, sessions, JIT configs, runners, tokens, errors).
#include <cstdint>
#include <string_view>

#include "adapters/github/actions_client.hpp"
#include "adapters/github/auth.hpp"
#include "adapters/github/payloads.hpp"
#include "adapters/hud/queued_jobs.hpp"

template <class Result, class Failure>
void check(const Result& r) {
  if (const auto* f = std::get_if<Failure>(&r))
    if (f->message.empty())
      __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in{reinterpret_cast<const char*>(data), size};
  using namespace headroom;
#if HEADROOM_FUZZ_KIND == 1
  check<github::decoded<github::session_message>, github::decode_failure>(github::decode_session_message(in));
#elif HEADROOM_FUZZ_KIND == 2
  check<github::decoded<github::statistics>, github::decode_failure>(github::decode_statistics(in));
#elif HEADROOM_FUZZ_KIND == 3
  check<std::variant<std::vector<hud::queued_jobs>, hud::hud_error>, hud::hud_error>(hud::decode_queued_jobs(in));
#elif HEADROOM_FUZZ_KIND == 5
  using github::decode_failure;
  check<github::decoded<github::runner_scale_set>, decode_failure>(github::decode_scale_set(in));
  check<github::decoded<std::vector<github::runner_scale_set>>, decode_failure>(github::decode_scale_set_list(in));
  check<github::decoded<std::vector<github::runner_group>>, decode_failure>(github::decode_runner_group_list(in));
  check<github::decoded<github::message_session>, decode_failure>(github::decode_session(in));
  check<github::decoded<github::jit_config>, decode_failure>(github::decode_jit_config(in));
  check<github::decoded<std::vector<github::runner_ref>>, decode_failure>(github::decode_runner_list(in));
  check<github::decoded<github::issued_token>, decode_failure>(github::decode_issued_token(in));
  check<github::decoded<github::admin_connection>, decode_failure>(github::decode_admin_connection(in));
  check<github::decoded<std::vector<int64_t>>, decode_failure>(github::decode_acquired_jobs(in));
  (void)github::decode_exception(in);
  (void)github::parse_config_url(in);
#else
  check<github::decoded<github::workflow_job_event>, github::decode_failure>(github::decode_workflow_job(in));
  (void)github::verify_webhook_signature("secret", in, in.substr(0, 71));
  check<github::decoded<std::vector<github::hook_delivery>>, github::decode_failure>(github::decode_hook_deliveries(in));
  check<github::decoded<std::string>, github::decode_failure>(github::next_page_cursor(in));
#endif
  return 0;
}
