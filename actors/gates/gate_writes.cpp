// The gate controller's writes (see gate_controller.cpp): pod conditions (at most
// max_bulk_in_flight at once, the rest held in order), gate removals, the Queue's status.

#include "actors/gates/gate_controller_state.hpp"

namespace headroom::actors::gates {

namespace kinds {
const k8s::resource_kind queues{"headroom.dev", "v1alpha1", "queues", false};
}

namespace ctl {

void write_condition(controller_self* self, const std::string& queue, const condition_write& c, const std::string& uid) {
  auto& st = self->state;
  const std::string key = c.ns + "/" + c.name;
  if (st.bulk_in_flight >= max_bulk_in_flight) {
    auto q = st.queues.find(queue);
    if (q != st.queues.end() && q->second.book) {
      if (st.held_keys.insert(key).second)
        st.held_conditions.emplace_back(queue, key);
    } else {
      st.deferred.insert(queue);  // planned again when a write comes back
    }
    return;
  }
  if (!st.condition_in_flight.insert(key).second)
    return;  // the reply plans again
  ++st.bulk_in_flight;
  const auto& ctx = *st.ctx;
  runtime::json_writer w;
  w.begin_object().key("status").begin_object().key("conditions").begin_array();
  w.begin_object().field("type", admitted_condition).field("status", c.status).field("reason", c.reason);
  w.field("message", c.message).field("lastTransitionTime", format_wall(ctx.wall_clock())).end_object();
  w.end_array().end_object().end_object();
  const std::string body = w.take();
  auto& client = *ctx.kube;
  start_call(self, {call_info::condition, queue, c.ns, c.name, {}, {}}, [&client, c, body](k8s::api_callback cb) {
    client.strategic_merge_patch(k8s::kinds::pods, c.ns, c.name, body, std::move(cb), "status");
  });
  // The condition is what `kubectl get -o yaml` shows; `kubectl describe` shows Events: one per
  // reason a pod waits for (not for every change of its message).
  auto told = st.reason_told.find(key);
  if (c.status == "False" && (told == st.reason_told.end() || told->second != c.reason)) {
    st.reason_told[key] = c.reason;
    const bool waiting = c.reason == "QueueFull" || c.reason == "OtherGates" || c.reason == "GangIncomplete";
    record_event(self, c.ns, c.name, uid, waiting ? "Normal" : "Warning", c.reason.c_str(), c.message);
  }
}

// Held condition writes, oldest first, as the book now says they should read (one whose pod
// caught up meanwhile is not written).
void write_held_conditions(controller_self* self) {
  auto& st = self->state;
  while (st.bulk_in_flight < max_bulk_in_flight && !st.held_conditions.empty()) {
    auto [queue, key] = std::move(st.held_conditions.front());
    st.held_conditions.pop_front();
    st.held_keys.erase(key);
    auto q = st.queues.find(queue);
    if (q == st.queues.end() || !q->second.book)
      continue;
    auto c = q->second.book->condition_of(key);
    if (!c)
      continue;
    if (auto p = st.ctx->pods->get(c->ns, c->name))
      write_condition(self, queue, *c, p->meta.uid);
  }
}

void ungate_pod(controller_self* self, const std::string& queue, const ungate& u, const k8s::pod& p) {
  auto& st = self->state;
  const std::string gate = "/spec/schedulingGates/" + std::to_string(u.gate_index);
  const std::string at = format_wall(st.ctx->wall_clock());
  runtime::json_writer w;
  w.begin_array();
  w.begin_object().field("op", "test").field("path", "/metadata/resourceVersion").field("value", u.resource_version).end_object();
  w.begin_object().field("op", "test").field("path", gate + "/name").field("value", k8s::admission::queue_gate).end_object();
  w.begin_object().field("op", "remove").field("path", gate).end_object();
  // The reservation's start, on the pod itself (it survives a restart of headroom).
  w.begin_object().field("op", "add");
  if (!p.meta.annotations->empty())
    w.field("path", "/metadata/annotations/headroom.dev~1ungated-at").field("value", at);
  else
    w.field("path", "/metadata/annotations").key("value").begin_object().field("headroom.dev/ungated-at", at).end_object();
  w.end_object().end_array();
  const std::string patch = w.take();
  st.in_flight[queue].insert(u.ns + "/" + u.name);
  auto& client = *st.ctx->kube;
  start_call(self, {call_info::ungate, queue, u.ns, u.name, st.woke, u.resource_version, now_of(self),
                    p.meta.annotation(gang_annotation) != nullptr},
             [&client, u, patch](k8s::api_callback cb) {
               // Urgent: an admission waits for nothing but the rate budget, not for the backlog of
               // conditions and Events a burst of gated pods makes.
               client.json_patch(k8s::kinds::pods, u.ns, u.name, patch, std::move(cb), {}, true);
             });
}

// The Active condition's transition time: kept while it holds, now when it flips.
static void stamp_active(controller_self* self, queue_entry& e, k8s::queue_status& status) {
  if (!e.active || *e.active != status.active) {
    e.active = status.active;
    e.active_since = format_wall(self->state.ctx->wall_clock());
  }
  status.active_since = e.active_since;
}

void write_status(controller_self* self, const std::string& queue, queue_entry& e, k8s::queue_status status) {
  stamp_active(self, e, status);
  if (e.status_in_flight || (e.written && *e.written == status))
    return;
  e.status_in_flight = true;
  e.written = status;
  auto& client = *self->state.ctx->kube;
  start_call(self, {call_info::status, queue, "", queue, {}, {}}, [&client, queue, body = k8s::encode_queue_status_patch(status)](k8s::api_callback cb) {
    client.json_patch(kinds::queues, "", queue, body, std::move(cb), "status");
  });
}

}  // namespace ctl
}  // namespace headroom::actors::gates
