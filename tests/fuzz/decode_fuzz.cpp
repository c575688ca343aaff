// libFuzzer: the decoders never crash on hostile input; they return an object or an error value.
// HEADROOM_FUZZ_KIND selects the entry point (pod, node and Karpenter NodePool, watch_event, an
// EventList read for what one component said, one fact read from an answer).
#include <cstdint>
#include <string_view>

#include "adapters/k8s/decode.hpp"
#include "adapters/k8s/fields.hpp"
#include "adapters/k8s/nodepool.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json{reinterpret_cast<const char*>(data), size};
#if HEADROOM_FUZZ_KIND == 1
  auto r = headroom::k8s::decode_pod(json);
  auto l = headroom::k8s::decode_list<headroom::k8s::pod>(json);
  (void)l;
#elif HEADROOM_FUZZ_KIND == 2
  auto r = headroom::k8s::decode_node(json);
  auto pool = headroom::k8s::decode_nodepool(json);
  if (const auto* e = std::get_if<headroom::k8s::decode_error>(&pool))
    if (e->message.empty())
      __builtin_trap();
#elif HEADROOM_FUZZ_KIND == 4
  auto r = headroom::k8s::decode_list<headroom::k8s::event>(json);
  (void)headroom::k8s::newest_event_from(json, "karpenter");
#elif HEADROOM_FUZZ_KIND == 5
  // One fact read from an answer (adapters/k8s/fields.hpp): never a crash, whatever the body.
  namespace k = headroom::k8s;
  (void)k::uid_of(json);
  (void)k::string_at(json, {"status", "nodeRef", "name"});
  (void)k::int_at(json, {"value"});
  (void)k::item_names(json);
  (void)k::item_names_labelled(json, "headroom.dev/instance", "");
  (void)k::newest_live_item(json);
  (void)k::item_keys(json);
  (void)k::scale_set_session_of(json);
#else
  auto r = headroom::k8s::decode_watch_event<headroom::k8s::pod>(json);
#endif
#if HEADROOM_FUZZ_KIND != 5
  if (const auto* e = std::get_if<headroom::k8s::decode_error>(&r))
    if (e->message.empty())
      __builtin_trap();  // every error must say something
#endif
  return 0;
}
