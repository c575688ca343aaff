#include "modes/scale_sets/mode.hpp"
#include "modes/scale_sets/declared.hpp"

#include <caf/all.hpp>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <optional>
#include <random>

#include "actors/capacity/burst_budget.hpp"
#include "actors/k8s/object_catalog.hpp"
#include "actors/listener/listener_session.hpp"
#include "modes/shared/series_table.hpp"
#include "modes/shared/start.hpp"
#include "adapters/k8s/quantity.hpp"
#include "adapters/k8s/scale.hpp"
#include "messages/type_ids.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/readiness.hpp"
#include "runtime/relay.hpp"
#include "runtime/secrets.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::modes::scale_sets {

using namespace actors::capacity;
using actors::listener_options;
using actors::listener_peers;
using actors::spawn_listener_session;
using actors::listener_actor;

namespace {

// Karpenter's NodePools are watched only where the cluster serves karpenter.sh/v1; elsewhere the
// informer would retry a 404 forever. Asked once at start-up (a Karpenter installed later is seen
// after a restart); a failed question is asked again, backing off to 5 minutes.
void watch_nodepools_if_served(k8s::client& kube, std::shared_ptr<k8s::informer<k8s::unstructured>> pools,
                               std::chrono::milliseconds retry = std::chrono::milliseconds{2'000}) {
  kube.discover("karpenter.sh/v1", [&kube, pools, retry](k8s::api_result r) {
    if (auto* e = std::get_if<k8s::api_error>(&r)) {
      if (e->what == k8s::api_error::kind::not_found) {
        runtime::log::info("scale_sets", "karpenter.sh/v1 is not served: placeholder pairs are not limited by NodePools");
        return;
      }
      runtime::log::warn("scale_sets", "cannot tell whether Karpenter's NodePools are served; asking again",
                         {{"error", e->describe()}, {"retry_in_ms", retry.count()}});
      kube.after(retry, [&kube, pools, retry] { watch_nodepools_if_served(kube, pools, std::min(retry * 2, std::chrono::milliseconds{300'000})); });
      return;
    }
    std::string error;
    if (!k8s::find_resource(std::get<std::string>(r), "karpenter.sh/v1", "NodePool", error)) {
      runtime::log::info("scale_sets", "karpenter.sh/v1 serves no NodePool: placeholder pairs are not limited by NodePools");
      return;
    }
    runtime::log::info("scale_sets", "watching Karpenter's NodePools: no pair is made that a pool at its limits could only time out");
    pools->start();
  });
}

// The install's part of its owner ConfigMaps' names (8 hex digits of its instance label): the same
// in every process of one install, another in another install sharing the namespace.
std::string install_tag(const std::string& instance) {
  uint32_t h = 2166136261u;  // FNV-1a: the same on every platform and in every process
  for (unsigned char c : instance)
    h = (h ^ c) * 16777619u;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

std::string process_token() {
  std::random_device rd;
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return buf;
}

}  // namespace

hud::queue_share queue_share_of(const hud_section& h) {
  return {h.share_index, h.share_count, std::chrono::duration<double, std::ratio<60>>(h.take_all_after).count()};
}

void scale_set_services::stop() {
  for (auto& [ns, r] : pods)
    r->source()->stop();
  for (auto& [ns, r] : arc_pods)
    r->source()->stop();
  for (auto& [ns, r] : declared_pods)
    r->source()->stop();
  for (auto& [ns, r] : declared_arc_pods)
    r->source()->stop();
  for (auto& o : objects)
    o->stop();
  if (nodes)
    nodes->stop();
  if (nodepools)
    nodepools->stop();
}

namespace {

// The Actions Service client (github.configUrl and its credentials), and the HUD's when hud.url is set.
std::optional<std::string> make_clients(const scale_sets_config& cfg, const github_section& gh,
                                        const std::map<std::string, std::string>& env, http::transport& io,
                                        scale_set_services& out) {
  auto get = [&env](const char* name) { return env_value(env, name); };
  auto where = github::parse_config_url(gh.config_url);
  if (auto* e = std::get_if<std::string>(&where))
    return "github.configUrl: " + *e;
  auto creds_or = github_credentials(env);
  if (auto* e = std::get_if<std::string>(&creds_or))
    return *e;
  const auto& creds = std::get<github::credentials>(creds_or);
  github::actions_options gopts;
  if (!gh.ca_file.empty()) {
    std::string error;
    gopts.ca_pem = read_text(gh.ca_file, error, "github.caFile");
    if (!error.empty())
      return error;
  }
  gopts.tokens = out.github_tokens;
  out.github = github::actions_client::make(std::get<github::config_url>(where), creds, io, gopts);
  if (cfg.hud.url.empty())
    return std::nullopt;
  hud::client_options h;
  h.url = cfg.hud.url;
  h.token = get("HEADROOM_HUD_TOKEN");
  if (h.token.empty())
    h.token = get("HUD_API_TOKEN");  // the design's name for it (seed 000: the listener pod's env from pytorch-hud-token)
  if (h.token.empty() && !get("HEADROOM_GITHUB_SECRET_DIR").empty()) {
    std::string found, error;
    h.token = secret_key(get("HEADROOM_GITHUB_SECRET_DIR"), {"hud-token", "hud_token"}, true, found, error);
  }
  runtime::secret_registry::global().add(h.token);
  h.ca_pem = gopts.ca_pem;
  out.hud = std::make_shared<hud::client>(io, h);
  return std::nullopt;
}

// Each scale set's context: its spec, its clients and informers, its metrics and its owner.
std::variant<std::vector<std::shared_ptr<scale_set_context>>, std::string> make_contexts(
    const scale_sets_config& cfg, const github_section& gh, k8s::client& kube, k8s::client* status_kube, runtime::metrics& m,
    scale_set_services& out) {
  const auto where = std::get<github::config_url>(github::parse_config_url(gh.config_url));
  const std::string process = "headroom-owner-" + process_token();
  const std::string owner_prefix = "headroom-owner-" + install_tag(out.instance) + "-";
  out.owner_process = process;
  out.owner_prefix = owner_prefix;
  out.where = where;
  out.kube = &kube;
  out.status_kube = status_kube;
  std::map<std::string, std::shared_ptr<std::set<std::string>>> kept;  // per namespace
  const auto reads = std::make_shared<k8s::shared_reads>(kube);
  out.reads = reads;
  std::vector<std::shared_ptr<scale_set_context>> made;
  for (size_t i = 0; i < cfg.sets.size(); ++i) {
    auto spec = make_spec(cfg.sets[i], i, cfg.priority_classes);
    if (auto* e = std::get_if<std::string>(&spec))
      return *e;
    auto ctx = std::make_shared<scale_set_context>();
    ctx->spec = std::get<scale_set_spec>(std::move(spec));
    ctx->spec.queue_share = queue_share_of(cfg.hud);
    ctx->kube = &kube;
    ctx->status_kube = status_kube;
    ctx->github = out.github;
    ctx->nodes = out.nodes;
    ctx->nodepools = out.nodepools;
    ctx->metrics = make_metrics(m, ctx->spec, where);
    ctx->events = out.events;
    ctx->owner_process = process;
    ctx->owner_configmap = owner_prefix + ctx->spec.name;
    auto& names = kept[ctx->spec.ns];
    if (!names)
      names = std::make_shared<std::set<std::string>>();
    names->insert(ctx->owner_configmap);
    ctx->owners_kept = names;
    ctx->sweeps_owners = names->size() == 1;  // the namespace's first scale set
    ctx->reads = reads;
    ctx->instance = out.instance;
    made.push_back(std::move(ctx));
  }
  return made;
}

// One pod informer per namespace for all its scale sets, each scale set seeing its own slice: a
// thousand scale sets cost one watch and one cache, not a thousand. The selector names the
// scale sets while the list is short (other scale sets' pods in the namespace, ARC's say, stay
// out of the cache); past 2,000 characters it is the label's existence. arc-mode scale sets
// have one more per namespace, by ARC's scale-set-name label: ARC's runner pods carry it (their
// AutoscalingRunnerSet's name), and so do those scale sets' placeholders.
void watch_pods(k8s::informer_set& informers, std::vector<std::shared_ptr<scale_set_context>> made, scale_set_services& out) {
  std::map<std::pair<std::string, bool>, std::vector<std::string>> names;
  for (const auto& ctx : made)
    names[{ctx->spec.ns, !ctx->spec.arc_set.empty()}].push_back(ctx->spec.arc_set.empty() ? ctx->spec.name : ctx->spec.arc_set);
  for (const auto& [at, list] : names) {
    const auto& [ns, arc] = at;
    const std::string key = arc ? keys::arc_scale_set_name : keys::scale_set;
    std::string in;
    for (const auto& n : list)
      in += (in.empty() ? "" : ",") + n;
    k8s::informer<k8s::pod>::options pod_opts;
    pod_opts.kind = k8s::kinds::pods;
    pod_opts.ns = ns;
    pod_opts.label_selector = key + (in.size() <= 2000 ? " in (" + in + ")" : "");
    (arc ? out.arc_pods : out.pods)[ns] = k8s::label_router<k8s::pod>::make(informers.get<k8s::pod>(pod_opts), key);
  }
  for (auto& ctx : made) {
    ctx->pods = ctx->spec.arc_set.empty() ? out.pods[ctx->spec.ns]->slice(ctx->spec.name)
                                          : out.arc_pods[ctx->spec.ns]->slice(ctx->spec.arc_set);
    out.contexts.push_back(std::move(ctx));
  }
  for (auto& [ns, r] : out.arc_pods)
    r->source()->start();
  for (auto& [ns, r] : out.pods)
    r->source()->start();
}

}  // namespace

std::optional<std::string> prepare_scale_sets(const scale_sets_config& cfg, const github_section& gh,
                                              const std::map<std::string, std::string>& env,
                                              k8s::client& kube, k8s::informer_set& informers, k8s::client* status_kube,
                                              http::transport& io, runtime::metrics& m, scale_set_services& out) {
  if (auto problem = make_clients(cfg, gh, env, io, out))
    return problem;
  k8s::informer<k8s::node>::options node_opts;
  node_opts.kind = k8s::kinds::nodes;
  out.nodes = informers.get<k8s::node>(node_opts);
  k8s::informer<k8s::unstructured>::options pool_opts;
  pool_opts.kind = k8s::nodepools;
  out.nodepools = informers.get<k8s::unstructured>(pool_opts);
  auto made = make_contexts(cfg, gh, kube, status_kube, m, out);
  if (auto* e = std::get_if<std::string>(&made))
    return *e;
  watch_pods(informers, std::get<std::vector<std::shared_ptr<scale_set_context>>>(std::move(made)), out);
  watch_objects(informers, cfg.objects.namespaces, out);
  if (!out.contexts.empty() || !out.objects.empty()) {
    out.nodes->start();
    watch_nodepools_if_served(kube, out.nodepools);
  }
  return std::nullopt;
}

// One scale set: its five actors under a supervisor, each reachable by its relay.
runtime::child_spec scale_set_subtree(const runtime::config& cfg, const context_ptr& ctx, const scale_set_peers& peers,
                                      runtime::metrics& m, runtime::readiness& ready, std::shared_ptr<actors::session_memo> memo,
                                      std::shared_ptr<runtime::memo<bool>> hand_over) {
  std::vector<runtime::child_spec> children;
  runtime::child_spec provisioner;
  provisioner.name = "runner_provisioner";
  provisioner.relay = runtime::untyped(peers.provisioner);
  provisioner.start = [ctx, peers](caf::actor_system& s) { return runtime::untyped(spawn_runner_provisioner(s, ctx, peers)); };
  children.push_back(std::move(provisioner));
  runtime::child_spec monitor;
  monitor.name = "capacity_monitor";
  monitor.relay = runtime::untyped(peers.monitor);
  monitor.start = [ctx, peers](caf::actor_system& s) { return runtime::untyped(spawn_capacity_monitor(s, ctx, peers)); };
  children.push_back(std::move(monitor));
  runtime::child_spec listener;
  listener.name = "listener_session";
  listener.relay = runtime::untyped(peers.listener);
  // The session the listener holds, kept across its restarts (runtime/memo.hpp).
  if (!memo)
    memo = std::make_shared<actors::session_memo>();
  listener.start = [ctx, peers, memo, hand_over](caf::actor_system& s) {
    listener_options o;
    o.scale_set_name = ctx->spec.name;
    o.runner_group = ctx->spec.runner_group;
    o.labels = ctx->spec.labels;
    o.owner = ctx->owner_process;
    o.repoll_on_change = ctx->spec.repoll_on_change;
    // capacity-unaware: maxRunners is advertised, a queued job is always offered.
    o.queue_check_interval = ctx->spec.capacity_aware ? ctx->spec.queue_check_interval : std::chrono::milliseconds{0};
    o.failed = ctx->metrics.actions_error;
    o.job = ctx->metrics.job;
    o.memo = memo;
    o.hand_over = hand_over;
    // Until the monitor answers: nothing confirmed yet, or maxRunners when capacity-unaware.
    o.initial_capacity = ctx->spec.capacity_aware ? 0 : ctx->spec.max_runners;
    return runtime::untyped(spawn_listener_session(
        s, ctx->github, listener_peers{{peers.provisioner, peers.monitor, peers.status}, peers.monitor, peers.status},
        std::move(o)));
  };
  children.push_back(std::move(listener));
  runtime::child_spec status;
  status.name = "scale_set_status";
  status.relay = runtime::untyped(peers.status);
  status.start = [ctx, peers](caf::actor_system& s) {
    return runtime::untyped(spawn_scale_set_status(s, ctx, std::chrono::seconds(5), peers));
  };
  children.push_back(std::move(status));
  runtime::child_spec health;
  health.name = "health_check";
  health.start = [ctx](caf::actor_system& s) { return runtime::untyped(spawn_health_check(s, ctx)); };
  children.push_back(std::move(health));
  return runtime::supervisor_child(runtime::supervisor_options_from(cfg, "scale_set/" + ctx->spec.name, &m, &ready),
                                   std::move(children));
}

namespace {

// The ScaleSet objects of the file's scale sets no longer configured go, once per start.
std::optional<runtime::child_spec> sweeper_child(const std::shared_ptr<scale_set_services>& svc) {
  if (!svc->contexts.empty() && svc->instance.empty())
    runtime::log::info("scale_sets", "leader election is off: ScaleSet objects of scale sets no longer configured are not removed",
                       {{"why", "without a Lease another headroom may run under the same name"}});
  if (!svc->contexts.empty() && !svc->instance.empty()) {
    std::set<std::pair<std::string, std::string>> keep;
    for (const auto& ctx : svc->contexts)
      keep.emplace(ctx->spec.ns, ctx->spec.name);
    runtime::child_spec sweeper;
    sweeper.name = "scale_set_sweeper";
    sweeper.start = [svc, keep](caf::actor_system& s) {
      return runtime::untyped(
          actors::capacity::spawn_scale_set_sweeper(s, svc->contexts.front()->kube, svc->instance, keep));
    };
    return sweeper;
  }
  return std::nullopt;
}

}  // namespace

runtime::child_spec scale_sets_subtree(const runtime::config& cfg, const scale_sets_config& modes, std::shared_ptr<scale_set_services> svc,
                                       runtime::metrics& m, runtime::readiness& ready) {
  runtime::child_spec out;
  out.name = "scale_sets";
  // The relays are made each time this subtree starts and live as long as it does, so a scale
  // set's supervisor restarting (or the hud_poller) never leaves a peer holding a dead address.
  out.start = [cfg, modes, sets = modes.sets, hud_interval = modes.hud.interval, share = queue_share_of(modes.hud), burst = modes.burst_budget, svc, &m,
               &ready](caf::actor_system& sys) {
    std::vector<caf::actor> relays;
    auto relay = [&](const std::string& name) {
      relays.push_back(runtime::spawn_relay(sys, name));
      return relays.back();
    };
    std::vector<scale_set_peers> peers;
    const auto budget_pairs = static_cast<int64_t>(burst.max_pending_pairs);
    using runtime::relay_as;
    const auto budget = budget_pairs > 0 && (!svc->contexts.empty() || !svc->objects.empty())
                            ? relay_as<burst_budget_actor>(relay("burst_budget"))
                            : burst_budget_actor{};
    // The supervisor's own address, for the catalog that adds and removes declared scale sets.
    const caf::actor parent = svc->objects.empty() ? caf::actor{} : relay("scale_sets");
    // The HUD's targets of declared scale sets, written as they start and stop.
    const auto hud_targets = parent && svc->hud ? std::make_shared<hud_target_registry>() : nullptr;
    for (const auto& ctx : svc->contexts) {
      const std::string at = ctx->spec.name + "/";
      peers.push_back(scale_set_peers{relay_as<monitor_actor>(relay(at + "capacity_monitor")),
                                      relay_as<listener_actor>(relay(at + "listener_session")),
                                      relay_as<provisioner_actor>(relay(at + "runner_provisioner")),
                                      relay_as<status_actor>(relay(at + "scale_set_status")), budget});
    }
    std::vector<runtime::child_spec> children;
    if (budget) {
      std::vector<actors::capacity::burst_client> monitors;
      for (const auto& p : peers)
        monitors.push_back(p.monitor);
      runtime::child_spec b;
      b.name = "burst_budget";
      b.relay = runtime::untyped(budget);
      b.start = [budget_pairs, monitors, &m](caf::actor_system& s) {
        return runtime::untyped(
            actors::capacity::spawn_burst_budget(s, budget_pairs, monitors, burst_budget_metrics(m, budget_pairs)));
      };
      children.push_back(std::move(b));
    }
    if (svc->hud) {
      std::vector<hud_target> targets;
      for (size_t i = 0; i < svc->contexts.size(); ++i) {
        auto labels = sets[i].labels;
        labels.push_back(sets[i].name);
        targets.push_back(hud_target{labels, peers[i].monitor, share});
      }
      runtime::child_spec hud;
      hud.name = "hud_poller";
      hud.start = [svc, interval = hud_interval, targets, metrics = hud_fetch_metrics(m), hud_targets](caf::actor_system& s) {
        return runtime::untyped(spawn_hud_poller(s, svc->hud, targets, interval, metrics, hud_targets));
      };
      children.push_back(std::move(hud));
    }
    for (size_t i = 0; i < svc->contexts.size(); ++i)
      children.push_back(scale_set_subtree(cfg, svc->contexts[i], peers[i], m, ready));
    if (auto sweeper = sweeper_child(svc))
      children.push_back(std::move(*sweeper));
    if (parent)
      children.push_back(catalog_child(cfg, modes, svc, budget, relay_as<runtime::supervisor_actor>(parent), hud_targets, m, ready));
    // The scale sets are independent: stopped all at once (each deletes its session), or 1,000 of
    // them took longer than the stop deadline and were killed.
    auto opts = runtime::supervisor_options_from(cfg, "scale_sets", &m, &ready);
    opts.parallel_stop = true;
    auto sup = runtime::untyped(runtime::spawn_supervisor(sys, std::move(opts), std::move(children)));
    if (parent)
      caf::anon_send(parent, msg::relay_target{sup});
    for (const auto& r : relays)
      runtime::own_relay(r, sup);
    return sup;
  };
  return out;
}

void scale_sets_mode::read(const std::string& key, const YAML::Node& node) {
  if (key == "scaleSets")
    config.sets = read_scale_sets(node);
  else if (key == "hud")
    read_hud(node, config.hud);
  else if (key == "priorityClasses")
    read_priority_classes(node, config.priority_classes);
  else if (key == "burstBudget")
    read_burst_budget(node, config.burst_budget);
  else if (key == "scaleSetObjects")
    config.objects = read_scale_set_objects(node);
}

void scale_sets_mode::check(const shared_sections& shared) {
  if (!config.sets.empty() && shared.github.config_url.empty())
    runtime::config_fail("github.configUrl", "required when scaleSets are configured");
  if (!config.objects.namespaces.empty() && shared.github.config_url.empty())
    runtime::config_fail("github.configUrl", "required when scaleSetObjects.namespaces are served");
}

std::vector<runner_claim> scale_sets_mode::runner_pods() const {
  std::vector<runner_claim> out;
  for (size_t i = 0; i < config.sets.size(); ++i)
    out.push_back({config.sets[i].ns, config.sets[i].name, "scaleSets[" + std::to_string(i) + "].name"});
  return out;
}

std::optional<start_problem> scale_sets_mode::prepare(const services& s) {
  svc_ = std::make_shared<scale_set_services>();
  svc_->events = s.events;
  svc_->github_tokens = s.github_tokens;
  const auto& le = s.cfg.leader_election;
  svc_->instance = actors::capacity::owned_instance(le.enabled, le.ns, le.name);
  if (auto problem = prepare_scale_sets(config, s.shared.github, s.env, *s.api, *s.informers, s.background_api, *s.github_io, s.metrics, *svc_))
    return start_problem{*problem};
  return std::nullopt;
}

std::optional<runtime::child_spec> scale_sets_mode::leader_only(const runtime::config& cfg, runtime::metrics& m,
                                                                runtime::readiness& ready) {
  return scale_sets_subtree(cfg, config, svc_, m, ready);
}

void scale_sets_mode::stop() {
  if (svc_)
    svc_->stop();
}

std::vector<tree_line> scale_sets_mode::leader_only_tree() const {
  return {{0, "scale_sets (supervisor)"},
          {1, "hud_poller (when hud.url is set)"},
          {1, "scale_set_sweeper (once: ScaleSet objects of scale sets no longer configured)"},
          {1, "burst_budget (when burstBudget.maxPendingPairs is set: the cluster's pending pairs, shared fairly)"},
          {1, "scale_set_catalog (when scaleSetObjects.namespaces are set: adds, replaces and stops declared scale sets)"},
          {1, "scale_set/<name> (supervisor) × one per scale set, configured or declared"},
          {2, "runner_provisioner"},
          {2, "capacity_monitor"},
          {3, "placeholder_pair × one per pair"},
          {2, "listener_session"},
          {2, "health_check"},
          {2, "scale_set_status (the ScaleSet object's status)"}};
}

std::unique_ptr<mode> make() { return std::make_unique<scale_sets_mode>(); }

}  // namespace headroom::modes::scale_sets
