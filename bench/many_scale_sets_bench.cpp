// Many scale sets in one headroom, beside one listener process per scale set as ARC deploys them
// (#38 item 1), against the same Actions Service peer (polls held 50 s, as the service does).
//
// headroom: `--sets` scale sets in one namespace, each with a warm pool of one pair, on the test
// control plane (kwok node, the chart's RBAC). Measured: the time from the process's start until
// every scale set holds its session and advertises its placed pair; then, idle for `--idle`
// seconds, its RSS, CPU, threads, descriptors and sockets; then propagation while `--rate` scale
// sets a second change capacity: the bench deletes a scale set's runner placeholder (its pair is
// broken: capacity 1 → 0) and headroom makes a new one (placed: 0 → 1). Down: from the delete to
// the first poll that carries 0; up: from the moment the bench's own watch saw the new runner
// placeholder Running to the first poll that carries 1.
//
// A large cluster (#38 item 2): `--nodes` more kwok nodes (not the pairs' pool) and `--pods` runner
// pods of the scale sets, created straight through the API before headroom starts and held Pending
// by a scheduling gate (nothing schedules or runs them). headroom caches and counts every one, so
// the startup time includes their initial sync; the idle RSS holds them; and the capacity decision's
// cost per change (headroom_capacity_decision_seconds, summed over the scale sets) is read after
// the propagation phase.
//
// `--restart 1` (#55): after the changes, headroom is stopped (SIGTERM, as a rollout stops it) and a
// new process started on the warm cluster: how long until every scale set holds its session and
// advertises its pair again, and how many placeholders were placed anew (0: every pair adopted).
//
// `--objects 1` (#55 item 2): the scale sets are ScaleSet objects (scaleSetObjects.namespaces)
// instead of the file's entries; after the propagation phase, `--edits` of them, one at a time
// every 2 s, get a warm pool of 2: how long from `kubectl apply` to the first poll of that scale
// set carrying 2 (its subtree replaced, its session handed over, its new pair placed), and, from
// the peer's records, whether any other scale set's session changed or any of its polls advertised
// less than its pair meanwhile (it must not), and whether the edited one kept its session.
//
// Side by side: `--listeners` processes of tests/peers/scaleset-listener (github.com/actions/scaleset
// v0.4.0's listener package, one scale set each), their RSS and CPU summed over the same idle time
// once every one holds its session.
//
//   HEADROOM_TESTENV_DIR=$(tests/testenv/build.sh) build/release/bench/many_scale_sets_bench
//       [--sets 100] [--listeners 100] [--idle 60] [--changes 100] [--rate 10] [--nodes 0] [--pods 0] [--restart 0]
//       [--objects 0] [--edits 20]
//
// Prints one JSON line per measure, then a Markdown table.

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/connection.hpp"
#include "adapters/k8s/fields.hpp"
#include "adapters/k8s/informer.hpp"
#include "runtime/rfc3339.hpp"
#include "e2e/bulk_create.hpp"
#include "e2e/capacity_world.hpp"
#include "testenv/child_process.hpp"
#include "histogram_text.hpp"
#include "hop_table.hpp"
#include "soak_probe.hpp"

using namespace headroom;
using namespace headroom::e2e;
using namespace std::chrono_literals;

namespace {

using bench::percentile;

const std::string ns = "many";

std::string set_name(const std::string& prefix, int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s-%04d", prefix.c_str(), i);
  return buf;
}

int sockets_of(pid_t pid) {
  int n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = opendir(dir.c_str())) {
    while (auto* e = readdir(d)) {
      char target[256];
      const auto len = readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
      n += len > 7 && std::string_view(target, static_cast<size_t>(len)).rfind("socket:", 0) == 0;
    }
    closedir(d);
  }
  return n;
}

// The idle footprint of a set of processes over `seconds`: RSS and sockets summed (their means),
// threads and descriptors summed, CPU as a share of one core.
struct footprint {
  double rss_mib = 0, cpu_pct = 0;
  int threads = 0, fds = 0, sockets = 0;
};

footprint idle_footprint(const std::vector<pid_t>& pids, std::chrono::seconds seconds) {
  auto cpu = [&] {
    double s = 0;
    for (auto p : pids)
      s += bench::probe(p).cpu_s;
    return s;
  };
  const double cpu0 = cpu();
  const auto t0 = std::chrono::steady_clock::now();
  footprint out;
  int samples = 0;
  while (std::chrono::steady_clock::now() - t0 < seconds) {
    std::this_thread::sleep_for(1s);
    footprint f;
    for (auto p : pids) {
      const auto s = bench::probe(p);
      f.rss_mib += s.rss_mib;
      f.threads += s.threads;
      f.fds += s.fds;
      f.sockets += sockets_of(p);
    }
    out.rss_mib += f.rss_mib;
    out.threads = f.threads;
    out.fds = f.fds;
    out.sockets = f.sockets;
    ++samples;
  }
  out.rss_mib /= std::max(1, samples);
  out.cpu_pct = 100 * (cpu() - cpu0) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// The peer's view of the scale sets named `prefix-…`: id by name, sessions, polls.
struct peer_view {
  std::map<std::string, int64_t> ids;
  std::map<int64_t, int> sessions;
  std::map<int64_t, int64_t> latest;
  struct poll {
    clock_type::time_point at;
    int64_t capacity;
    clock_type::time_point arrived;  // when the peer's HTTP server handed it over, before the service's lock
  };
  std::unordered_map<int64_t, std::vector<poll>> polls;
  std::map<int64_t, std::string> session_ids;  // id → its session's id (the last one listed)
};

peer_view look(const env& e, const std::string& prefix) {
  peer_view v;
  simdjson::dom::parser p;
  auto st = p.parse(e.peer->control("/state").body);
  std::unordered_map<int64_t, bool> mine;
  for (auto s : st["scaleSets"].get_array()) {
    const std::string name{std::string_view(s["name"])};
    if (name.rfind(prefix + "-", 0) == 0) {
      v.ids[name] = int64_t(s["id"]);
      mine[int64_t(s["id"])] = true;
    }
  }
  for (auto s : st["sessions"].get_array())
    if (mine.count(int64_t(s["scaleSetId"]))) {
      ++v.sessions[int64_t(s["scaleSetId"])];
      v.session_ids[int64_t(s["scaleSetId"])] = std::string{std::string_view(s["sessionId"])};
    }
  for (auto poll : st["polls"].get_array()) {
    const int64_t set = int64_t(poll["scaleSetId"]);
    if (!mine.count(set))
      continue;
    v.latest[set] = int64_t(poll["capacity"]);
    v.polls[set].push_back({parse_time(std::string_view(poll["at"])), int64_t(poll["capacity"]), parse_time(std::string_view(poll["arrivedAt"]))});
  }
  return v;
}

std::string kwok_node(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "big-%05d", i);
  return std::string{R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")"} + name +
         R"(","annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"type":"kwok","pool":"big","kubernetes.io/hostname":")" + name +
         R"("}},"status":{"allocatable":{"cpu":"32","memory":"128Gi","pods":"110"},"capacity":{"cpu":"32","memory":"128Gi","pods":"110"}}})";
}

}  // namespace

// A ScaleSet's spec as the bench's file entries have it (warm pool `warm`).
std::string object_spec(int warm, bool long_pending) {
  return std::string{"{maxRunners: 10, runner: {image: runner:bench, resources: {cpu: 100m, memory: 128Mi}, nodeSelector: {pool: many}}, "
                     "capacityAware: {proactiveCapacity: "} +
         std::to_string(warm) + ", placeholderReadyTimeout: 10m, workflowResources: {cpu: 100m, memory: 128Mi}}" +
         (long_pending ? ", healthCheck: {pendingTimeout: 24h}}" : "}");
}

struct edit_result {
  std::vector<double> apply_to_poll_ms;
  std::vector<double> apply_to_replaced_ms;  // to headroom's "scale set replaced" (its new subtree runs)
  // The same span split at the bench's own ScaleSet watch: kubectl, the API server and its watch
  // delivery on one side; headroom's share (its own watch's delivery, the catalog, the stop and
  // the start of the subtree) on the other.
  std::vector<double> apply_to_bench_watch_ms, bench_watch_to_replaced_ms;
  int kept_session = 0, others_session_changed = 0, others_polls_below = 0;
};

// --objects: `edits` ScaleSets, one every 2 s, get a warm pool of 2 (see the header).
edit_result edit_objects(env& e, const agent& headroom, k8s::client& api, int edits, int sets) {
  edit_result out;
  // The bench's own watch of the ScaleSets: when each one's generation 2 (the edit) arrived.
  std::mutex m;
  std::map<std::string, double> watched_wall;
  k8s::informer<k8s::unstructured>::options so;
  so.kind = k8s::resource_kind{"headroom.dev", "v1alpha1", "scalesets", true};
  so.ns = ns;
  auto scale_sets = k8s::informer<k8s::unstructured>::make(api, so);
  scale_sets->subscribe([&](const k8s::informer<k8s::unstructured>::event& ev) {
    if (k8s::int_at(ev.object->raw, {"metadata", "generation"}).value_or(0) < 2)
      return;
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::lock_guard lock{m};
    watched_wall.emplace(ev.object->meta.name, now);
  });
  scale_sets->start();
  eventually([&] { return scale_sets->synced(); }, std::chrono::seconds(30));
  std::map<std::string, double> applied_wall;  // scale set → when kubectl apply was started (seconds since the epoch)
  const auto before = look(e, "hr");
  std::map<int64_t, size_t> polls_before;
  for (const auto& [set, list] : before.polls)
    polls_before[set] = list.size();
  std::set<int64_t> edited;
  for (int k = 0; k < edits && k < sets; ++k) {
    const std::string name = set_name("hr", (k * 37 + 11) % sets);
    const int64_t id = before.ids.at(name);
    edited.insert(id);
    const auto applied_at = clock_type::now();
    applied_wall[name] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto r = e.c->kubectl({"apply", "-f", "-"}, "apiVersion: headroom.dev/v1alpha1\nkind: ScaleSet\nmetadata: {name: " + name +
                                                   ", namespace: " + std::string{ns} + "}\nspec: " + object_spec(2, false) + "\n");
    if (r.exit_code != 0) {
      std::fprintf(stderr, "many_scale_sets_bench: editing %s: %s\n", name.c_str(), r.err.c_str());
      continue;
    }
    clock_type::time_point seen{};
    eventually([&] {
      const auto now = look(e, "hr");
      auto it = now.polls.find(id);
      if (it == now.polls.end())
        return false;
      for (const auto& p : it->second)
        if (p.at >= applied_at && p.capacity == 2) {
          seen = p.at;
          return true;
        }
      return false;
    }, std::chrono::seconds(60));
    if (seen != clock_type::time_point{})
      out.apply_to_poll_ms.push_back(std::chrono::duration<double, std::milli>(seen - applied_at).count());
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  // headroom's own record of each replacement: its catalog's log line once the new subtree runs.
  std::istringstream log{headroom.full_log()};
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"scale set replaced") == std::string::npos)
      continue;
    const auto field = [&](const std::string& key) {
      const auto at = line.find("\"" + key + "\":\"");
      return at == std::string::npos ? std::string{} : line.substr(at + key.size() + 4, line.find('"', at + key.size() + 4) - at - key.size() - 4);
    };
    const auto when = runtime::parse_rfc3339(field("ts"));
    const auto name = field("name");
    if (auto it = applied_wall.find(name); it != applied_wall.end() && when) {
      out.apply_to_replaced_ms.push_back(1e3 * (*when - it->second));
      std::lock_guard lock{m};
      if (auto w = watched_wall.find(name); w != watched_wall.end()) {
        out.apply_to_bench_watch_ms.push_back(1e3 * (w->second - it->second));
        out.bench_watch_to_replaced_ms.push_back(1e3 * (*when - w->second));
      }
    }
  }
  scale_sets->stop();
  const auto after = look(e, "hr");
  for (const auto& [name, id] : after.ids) {
    const bool same = before.session_ids.count(id) && after.session_ids.count(id) && before.session_ids.at(id) == after.session_ids.at(id);
    if (edited.count(id)) {
      out.kept_session += same ? 1 : 0;
      continue;
    }
    out.others_session_changed += same ? 0 : 1;
    if (auto it = after.polls.find(id); it != after.polls.end())
      for (size_t i = polls_before[id]; i < it->second.size(); ++i)
        out.others_polls_below += it->second[i].capacity < 1 ? 1 : 0;
  }
  std::fprintf(stderr, "[many] %zu of %d edits advertised, %d kept their session; others: %d sessions changed, %d polls below the pair\n",
               out.apply_to_poll_ms.size(), edits, out.kept_session, out.others_session_changed, out.others_polls_below);
  return out;
}

// #62: each change headroom published in the phase, split into hops (bench/hop_table.hpp), drops
// and rises apart. `bench_seen`: when the bench's own watch read a resourceVersion; `answered`:
// when the DELETE of a pod (by uid) was answered.
template <class Change, class Seen, class Answered>
std::pair<bench::hop_samples, bench::hop_samples> hop_table(const std::vector<Change>& done, const std::string& log, const bench::go_watch& go,
                                                            const peer_view& v, Seen bench_seen, Answered answered) {
  std::pair<bench::hop_samples, bench::hop_samples> out;
  if (done.empty())
    return out;
  const auto ms = [](clock_type::time_point from, clock_type::time_point to) { return std::chrono::duration<double, std::milli>(to - from).count(); };
  const auto holdups = bench::io_holdups(log);
  for (const auto& c : bench::published_changes(log)) {
    if (c.published < done.front().deleted || (c.capacity != 0 && c.capacity != 1))
      continue;
    auto id = v.ids.find(c.scale_set);
    if (id == v.ids.end())
      continue;
    auto& h = c.capacity == 0 ? out.first : out.second;
    const auto go_at = go.seen(c.rv);
    const auto bench_at = bench_seen(c.rv);
    if (c.capacity == 0) {  // the delete behind it: the scale set's last before the publish
      const Change* del = nullptr;
      for (const auto& ch : done)
        if (ch.set == c.scale_set && ch.deleted <= c.published)
          del = &ch;
      if (del != nullptr) {
        if (auto a = answered(del->old_uid))
          h.add("DELETE sent → answered", ms(del->deleted, *a));
        if (go_at)
          h.add("DELETE sent → Go client's watch read it", ms(del->deleted, *go_at));
      }
    }
    if (go_at && bench_at)
      h.add("Go client's watch → the bench's watch (headroom's client)", ms(*go_at, *bench_at));
    if (go_at) {
      h.add("Go client's watch → headroom read it", ms(*go_at, c.received()));
      if (ms(*go_at, c.received()) > 100) {
        std::fprintf(stderr, "[late read] %s rv %s: the Go client's watch read it at %.3f, headroom %.0f ms later\n", c.scale_set.c_str(),
                     c.rv.c_str(), std::chrono::duration<double>(go_at->time_since_epoch()).count(), ms(*go_at, c.received()));
        // What headroom's I/O thread said about the same stretch (a turn held up ≥ 250 ms).
        for (const auto& h : holdups)
          if (h.at + std::chrono::seconds(2) >= *go_at && h.at <= c.received() + std::chrono::milliseconds(500))
            std::fprintf(stderr, "[late read]   headroom's I/O thread at %.3f: busy %lld ms, woke %lld ms late\n",
                         std::chrono::duration<double>(h.at.time_since_epoch()).count(), static_cast<long long>(h.busy_ms),
                         static_cast<long long>(h.woke_late_ms));
      }
    }
    h.add("read → drained by the monitor", c.event_to_monitor_ms);
    h.add("drained → judged (its pair, or the monitor)", c.monitor_to_judged_ms);
    h.add("judged → published", c.since_event_ms - c.event_to_monitor_ms - c.monitor_to_judged_ms);
    h.add("read → published (headroom)", c.since_event_ms);
    auto polls = v.polls.find(id->second);
    if (polls == v.polls.end())
      continue;
    for (const auto& p : polls->second)
      if (p.arrived + std::chrono::milliseconds(1) >= c.published && p.capacity == c.capacity) {
        h.add("published → the peer's HTTP server read the poll", ms(c.published, p.arrived));
        h.add("the peer read the poll → recorded it (its lock)", ms(p.arrived, p.at));
        if (go_at)
          h.add("Go client's watch → the peer read the poll", ms(*go_at, p.arrived));
        break;
      }
  }
  return out;
}

int main(int argc, char** argv) {
  int sets = 100, listeners = 100, idle = 60, changes = 100, rate = 10, nodes = 0, runner_pods = 0, restart = 0, objects = 0,
      edits = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::stoi(argv[i + 1]);
    if (a == "--sets")
      sets = v;
    else if (a == "--listeners")
      listeners = v;
    else if (a == "--idle")
      idle = v;
    else if (a == "--changes")
      changes = v;
    else if (a == "--rate")
      rate = v;
    else if (a == "--nodes")
      nodes = v;
    else if (a == "--pods")
      runner_pods = v;
    else if (a == "--restart")
      restart = v;
    else if (a == "--objects")
      objects = v;
    else if (a == "--edits")
      edits = v;
  }
  env e;
  if (!bench_env(e, "many_scale_sets_bench"))
    return 1;
  const std::string dir = e.c->dir() + "/many-sets";
  std::filesystem::create_directories(dir);
  e.c->kubectl({"create", "namespace", ns});
  e.c->kubectl({"apply", "-f", "-"}, "apiVersion: v1\nkind: Node\nmetadata:\n  name: many-node\n  annotations: {kwok.x-k8s.io/node: fake}\n"
                  "  labels: {kubernetes.io/hostname: many-node, type: kwok, pool: many}\nstatus:\n"
                  "  allocatable: {cpu: \"20000\", memory: 100000Gi, pods: \"30000\"}\n  capacity: {cpu: \"20000\", memory: 100000Gi, pods: \"30000\"}\n");
  std::ostringstream values, config;
  values << "config:\n  github: {configUrl: " << e.peer->http_url() << "/headroom-org}\n"
         << (objects > 0 ? "  scaleSetObjects: {namespaces: [" + std::string{ns} + "]}\n" : std::string{"  scaleSets:\n"});
  std::ostringstream declared;  // --objects: the ScaleSet objects, one YAML stream
  for (int i = 0; i < sets; ++i) {
    if (objects == 0)
      values << "    - {name: " << set_name("hr", i) << ", namespace: " << ns << "}\n";
    declared << "---\napiVersion: headroom.dev/v1alpha1\nkind: ScaleSet\nmetadata: {name: " << set_name("hr", i) << ", namespace: " << ns
             << "}\nspec: " << object_spec(1, runner_pods > 0) << "\n";
    config << "  - name: " << set_name("hr", i) << "\n    namespace: " << ns << "\n    maxRunners: 10\n"
           << "    runner: {image: runner:bench, resources: {cpu: 100m, memory: 128Mi}, nodeSelector: {pool: many}}\n"
           << "    capacityAware: {proactiveCapacity: 1, placeholderReadyTimeout: 10m, workflowResources: {cpu: 100m, memory: 128Mi}}\n";
    if (runner_pods > 0)  // the gated runner pods are older than any pending timeout by the time headroom starts
      config << "    healthCheck: {pendingTimeout: 24h}\n";
  }
  values << "github: {existingSecret: bench-github}\n"
            "priorityClasses: {placeholderRunner: placeholder-runner, runner: arc-runner, placeholderWorkflow: placeholder-workflow, "
            "workflow: arc-workflow}\n";
  std::ofstream(dir + "/values.yaml") << values.str();
  auto id = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/testenv/chart-identity.sh", e.c->kubeconfig(),
                                  dir + "/values.yaml", "bench-many", "headroom-bench", dir + "/chart.kubeconfig"});
  if (id.exit_code != 0) {
    std::fprintf(stderr, "many_scale_sets_bench: the chart's identity: %s\n", id.err.c_str());
    return 1;
  }

  // The bench's own clock of "placed": when each runner placeholder (by uid) was first seen Running.
  auto conn = std::get<k8s::connection>(k8s::load_kubeconfig(e.c->kubeconfig(), ""));
  k8s::transport io{bulk_transport_options()};
  k8s::client api{conn, io};
  std::mutex m;
  // set/role → (uid, when it was first seen Running)
  std::map<std::string, std::vector<std::pair<std::string, clock_type::time_point>>> running;
  k8s::informer<k8s::pod>::options po;
  po.kind = k8s::kinds::pods;
  po.ns = ns;
  po.label_selector = "headroom.dev/role in (runner-placeholder,workflow-placeholder)";
  auto pods = k8s::informer<k8s::pod>::make(api, po);
  // When the bench's own watch saw each placeholder go: a slow drop that the bench's watch also
  // saw late was slow in the API server, before headroom could know of it.
  std::unordered_map<std::string, clock_type::time_point> gone;
  std::unordered_map<std::string, clock_type::time_point> bench_seen;  // resourceVersion → when the bench's watch read it
  pods->subscribe([&](const k8s::informer<k8s::pod>::event& ev) {
    if (!ev.resource_version.empty()) {
      std::lock_guard lock{m};
      bench_seen.emplace(ev.resource_version, clock_type::now());
    }
    if (ev.type == k8s::informer<k8s::pod>::event_type::deleted) {
      std::lock_guard lock{m};
      gone.emplace(ev.object->meta.uid, clock_type::now());
      return;
    }
    if (ev.object->phase != "Running")
      return;
    const auto* set = ev.object->meta.label("headroom.dev/scale-set");
    const auto* role = ev.object->meta.label("headroom.dev/role");
    if (set == nullptr || role == nullptr)
      return;
    std::lock_guard lock{m};
    auto& seen = running[*set + "/" + *role];
    if (std::none_of(seen.begin(), seen.end(), [&](const auto& p) { return p.first == ev.object->meta.uid; }))
      seen.emplace_back(ev.object->meta.uid, clock_type::now());
  });
  pods->start();
  // The same watch through a Go client (#62): the API server's delivery as client-go reads it.
  bench::go_watch go{std::string{std::getenv("HEADROOM_TESTENV_DIR")} + "/bin/kubectl", e.c->kubeconfig(),
                     "/api/v1/namespaces/" + ns +
                         "/pods?watch=true&timeoutSeconds=3600&labelSelector=headroom.dev%2Frole%20in%20(runner-placeholder%2Cworkflow-placeholder)"};

  if (nodes > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    create_many(api, k8s::kinds::nodes, "", nodes, kwok_node);
    std::fprintf(stderr, "[many] %d kwok nodes created in %.0f s\n", nodes,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (runner_pods > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    create_many(api, k8s::kinds::pods, ns, runner_pods, [&](int i) { return gated_runner_pod(ns, set_name("hr", i % sets), i / sets); });
    std::fprintf(stderr, "[many] %d gated runner pods created in %.0f s\n", runner_pods,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }

  const auto started = std::chrono::steady_clock::now();
  // glibc's allocator tunables reach headroom from the bench's environment, to compare them; and
  // libcurl's TLS key log, to read a packet capture of headroom's connections (bench/README.md).
  std::vector<std::string> agent_env;
  for (const char* name : {"MALLOC_ARENA_MAX", "GLIBC_TUNABLES", "HEADROOM_LOG_LEVEL", "SSLKEYLOGFILE"})
    if (const char* v = std::getenv(name))
      agent_env.push_back(std::string{name} + "=" + v);
  const std::string scale_sets_yaml =
      objects > 0 ? "scaleSetObjects:\n  namespaces: [" + std::string{ns} + "]\n" : "scaleSets:\n" + config.str();
  if (objects > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    auto applied = e.c->kubectl({"apply", "-f", "-"}, declared.str());
    if (applied.exit_code != 0) {
      std::fprintf(stderr, "many_scale_sets_bench: the ScaleSet objects: %s\n", applied.err.c_str());
      return 1;
    }
    std::fprintf(stderr, "[many] %d ScaleSet objects applied in %.0f s\n", sets,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  auto headroom = std::make_unique<agent>(dir,
                                          "kubernetes:\n  kubeconfig: " + dir + "/chart.kubeconfig\n"
                                          "leaderElection:\n  enabled: false\ngithub:\n  configUrl: " +
                                              e.peer->http_url() + "/headroom-org\n" + scale_sets_yaml,
                                          agent_env);
  peer_view v;
  auto all_ready = [&] {
    v = look(e, "hr");
    if (static_cast<int>(v.ids.size()) != sets)
      return false;
    for (const auto& [name, set] : v.ids)
      if (v.sessions[set] < 1 || v.latest[set] != 1)
        return false;
    return true;
  };
  if (!eventually(all_ready, std::chrono::minutes(20))) {
    int held = 0, advertising = 0;
    for (const auto& [name, set] : v.ids) {
      held += v.sessions[set] > 0;
      advertising += v.latest[set] == 1;
    }
    std::fprintf(stderr, "many_scale_sets_bench: after 20 min, %zu scale sets at the peer, %d with a session, %d advertising 1\n%s\n",
                 v.ids.size(), held, advertising, headroom->log().c_str());
    return 1;
  }
  const double startup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fprintf(stderr, "[many] %d scale sets ready in %.1f s\n", sets, startup_s);
  const auto ours = idle_footprint({headroom->pid()}, std::chrono::seconds(idle));

  // headroom's own share of propagation (headroom_capacity_propagation_seconds: from publishing a
  // capacity to the first poll that carries it), counted over this phase only.
  const std::string metrics_before = headroom->metrics();
  const auto inside_before = bench::buckets(metrics_before, "headroom_capacity_propagation_seconds");
  // Propagation: `rate` scale sets a second lose their runner placeholder.
  struct change {
    std::string set;
    int64_t id;
    clock_type::time_point deleted;
    std::string old_uid;
  };
  std::vector<change> done;
  std::unordered_map<std::string, clock_type::time_point> answered;  // pod uid → when its DELETE was answered
  const auto step = std::chrono::microseconds(1'000'000 / std::max(1, rate));
  auto next = std::chrono::steady_clock::now();
  for (int c = 0; c < changes; ++c) {
    const std::string set = set_name("hr", (c * 7) % sets);  // spread over the scale sets
    auto r = e.c->kubectl({"-n", ns, "get", "pods", "-l", "headroom.dev/role=runner-placeholder,headroom.dev/scale-set=" + set, "-o",
                           "jsonpath={.items[0].metadata.name} {.items[0].metadata.uid}"});
    std::istringstream in{r.out};
    std::string name, uid;
    in >> name >> uid;
    std::this_thread::sleep_until(next);
    next += step;
    if (name.empty())  // the scale set's new pair is not made yet (few scale sets, changed often)
      continue;
    k8s::delete_options del;
    del.grace_period_seconds = 0;
    done.push_back({set, v.ids[set], clock_type::now(), uid});
    api.remove(k8s::kinds::pods, ns, name, del, [&m, &answered, uid](k8s::api_result) {
      std::lock_guard lock{m};
      answered.emplace(uid, clock_type::now());
    });
  }
  std::this_thread::sleep_for(30s);
  v = look(e, "hr");
  std::vector<double> down, up, bench_watch, down_recorded, up_recorded;
  int missed = 0, ahead = 0;
  double ahead_max_ms = 0;
  for (const auto& ch : done) {
    const auto& polls = v.polls[ch.id];
    auto zero = std::find_if(polls.begin(), polls.end(), [&](const auto& p) { return p.arrived >= ch.deleted && p.capacity == 0; });
    // The new pair is placed when its runner placeholder (new since the delete) and its workflow
    // placeholder (the newest) both run.
    clock_type::time_point placed{}, workflow{};
    {
      std::lock_guard lock{m};
      for (const auto& [uid, when] : running[ch.set + "/runner-placeholder"])
        if (uid != ch.old_uid && when >= ch.deleted)
          placed = placed == clock_type::time_point{} ? when : std::min(placed, when);
      // The new pair's: the first run after the delete (a scale set changed twice has a later one).
      for (const auto& [uid, when] : running[ch.set + "/workflow-placeholder"])
        if (when >= ch.deleted)
          workflow = workflow == clock_type::time_point{} ? when : std::min(workflow, when);
    }
    if (placed != clock_type::time_point{})
      placed = std::max(placed, workflow);
    if (zero == polls.end() || placed == clock_type::time_point{}) {
      ++missed;
      continue;
    }
    // Timed to the peer's receipt of the poll (its HTTP server handing it over); the peer records it
    // only after its one lock, which a thousand held polls contend for (#62: p50 85-130 ms there).
    down.push_back(std::chrono::duration<double, std::milli>(zero->arrived - ch.deleted).count());
    down_recorded.push_back(std::chrono::duration<double, std::milli>(zero->at - ch.deleted).count());
    // The first poll carrying 1 after the drop. headroom's informer can see the new pair run a
    // few milliseconds before the bench's own watch does (both watch the API server; at 100,000
    // pods either may lag): that poll then arrives before `placed`, and looking only after
    // `placed` found the next one, a whole 50 s hold later. Such a rise counts as 0 ms, and how far
    // ahead it was is reported (a rise seconds ahead would be capacity advertised before it was
    // placed: a defect, not watch skew).
    auto one = std::find_if(zero, polls.end(), [&](const auto& p) { return p.capacity == 1; });
    if (one != polls.end()) {
      const double ms = std::chrono::duration<double, std::milli>(one->arrived - placed).count();
      up_recorded.push_back(std::max(0.0, std::chrono::duration<double, std::milli>(one->at - placed).count()));
      if (ms < 0) {
        ++ahead;
        ahead_max_ms = std::max(ahead_max_ms, -ms);
      }
      up.push_back(std::max(0.0, ms));
    } else {
      ++missed;
    }
    auto stamp = [](clock_type::time_point t) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
      return std::to_string(us / 1'000'000) + "." + std::to_string(us % 1'000'000);
    };
    double watch_ms = -1;
    {
      std::lock_guard lock{m};
      if (auto g = gone.find(ch.old_uid); g != gone.end())
        watch_ms = std::chrono::duration<double, std::milli>(g->second - ch.deleted).count();
    }
    if (watch_ms >= 0)
      bench_watch.push_back(watch_ms);
    if (down.back() > 200 || (!up.empty() && one != polls.end() && up.back() > 200))
      std::fprintf(stderr, "[slow] %s: deleted %s, the bench's watch saw it after %.0f ms, 0 polled after %.0f ms, placed %s, 1 polled after %.0f ms\n",
                   ch.set.c_str(), stamp(ch.deleted).c_str(), watch_ms, down.back(), stamp(placed).c_str(),
                   one != polls.end() ? up.back() : -1.0);
  }
  const auto hops = hop_table(done, headroom->full_log(), go, v, [&](const std::string& rv) {
    std::lock_guard lock{m};
    auto it = bench_seen.find(rv);
    return it == bench_seen.end() ? std::optional<clock_type::time_point>{} : std::optional{it->second};
  }, [&](const std::string& uid) {
    std::lock_guard lock{m};
    auto it = answered.find(uid);
    return it == answered.end() ? std::optional<clock_type::time_point>{} : std::optional{it->second};
  });
  const auto decision = bench::buckets(headroom->metrics(), "headroom_capacity_decision_seconds");
  const auto decisions = decision.empty() ? 0.0 : decision.rbegin()->second;
  auto inside = bench::buckets(headroom->metrics(), "headroom_capacity_propagation_seconds");
  for (auto& [le, n] : inside)
    if (auto it = inside_before.find(le); it != inside_before.end())
      n -= it->second;
  const double polls_inside = inside.empty() ? 0.0 : inside.rbegin()->second;
  // What the Kubernetes client did meanwhile: the pod watches resumed (the server ends each after
  // ~5 min), and how long requests waited for the rate budget, urgent (watches, lists) and bulk.
  const std::string metrics_after = headroom->metrics();
  const double pod_watches = bench::series_sum(metrics_after, "headroom_kubernetes_informer_watches_total", "resource=\"pods\"") -
                             bench::series_sum(metrics_before, "headroom_kubernetes_informer_watches_total", "resource=\"pods\"");
  const double pod_handovers =
      bench::series_sum(metrics_after, "headroom_kubernetes_informer_watch_handovers_total", "resource=\"pods\"") -
      bench::series_sum(metrics_before, "headroom_kubernetes_informer_watch_handovers_total", "resource=\"pods\"");
  const auto wait = [&](const char* priority) {
    const std::string label = std::string{"priority=\""} + priority + "\"";
    return bench::buckets_since(bench::buckets(metrics_after, "headroom_kubernetes_rate_limiter_wait_seconds", label),
                                bench::buckets(metrics_before, "headroom_kubernetes_rate_limiter_wait_seconds", label));
  };
  const auto normal_wait = wait("normal"), urgent_wait = wait("urgent"), background_wait = wait("background");
  const auto edited = objects > 0 ? edit_objects(e, *headroom, api, edits, sets) : edit_result{};
  // The process's peak resident set over the whole run (start-up's lists included): what a memory
  // limit must hold, beside the idle mean above.
  double peak_rss_mib = 0;
  {
    std::ifstream status{"/proc/" + std::to_string(headroom->pid()) + "/status"};
    for (std::string line; std::getline(status, line);)
      if (line.starts_with("VmHWM:"))
        peak_rss_mib = std::stod(line.substr(6)) / 1024;
  }
  headroom->stop();
  // --restart 1 (#55): a new process on the warm cluster, as a rollout or an upgrade starts one.
  // SIGTERM kept the placed pairs; how long until every scale set holds its session and
  // advertises its pair again, how many placeholders were placed anew (a uid not seen before the
  // stop), and how many polls of the new sessions advertised less than the pair.
  double restart_s = -1;
  int replaced = -1, short_polls = 0, most_short = 0;  // polls below the pair: all, and a scale set's most
  if (restart > 0) {
    auto placeholder_uids = [&] {
      auto r = e.c->kubectl({"-n", ns, "get", "pods", "-l", "headroom.dev/role in (runner-placeholder,workflow-placeholder)", "-o",
                             "jsonpath={range .items[*]}{.metadata.uid}{\"\\n\"}{end}"});
      std::set<std::string> out;
      std::istringstream in{r.out};
      for (std::string uid; std::getline(in, uid);)
        if (!uid.empty())
          out.insert(uid);
      return out;
    };
    const auto before = placeholder_uids();
    std::map<int64_t, size_t> polls_before;
    for (const auto& [set, list] : look(e, "hr").polls)
      polls_before[set] = list.size();
    const auto t0 = std::chrono::steady_clock::now();
    headroom = std::make_unique<agent>(dir,
                                       "kubernetes:\n  kubeconfig: " + dir + "/chart.kubeconfig\n"
                                       "leaderElection:\n  enabled: false\ngithub:\n  configUrl: " +
                                           e.peer->http_url() + "/headroom-org\n" + scale_sets_yaml,
                                       agent_env);
    if (!eventually(all_ready, std::chrono::minutes(20))) {
      std::fprintf(stderr, "many_scale_sets_bench: after a restart, not every scale set was ready in 20 min\n%s\n", headroom->log().c_str());
      return 1;
    }
    restart_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    replaced = 0;
    for (const auto& uid : placeholder_uids())
      replaced += before.count(uid) == 0 ? 1 : 0;
    for (const auto& [set, list] : v.polls) {
      int mine = 0;
      for (size_t i = polls_before[set]; i < list.size(); ++i)
        mine += list[i].capacity < 1 ? 1 : 0;
      short_polls += mine;
      most_short = std::max(most_short, mine);
    }
    std::fprintf(stderr, "[many] restarted: %d scale sets ready again in %.1f s, %d placeholders placed anew\n", sets, restart_s, replaced);
    headroom->stop();
  }
  pods->stop();
  std::filesystem::copy_file(dir + "/agent.log", "/tmp/many_scale_sets_headroom.log", std::filesystem::copy_options::overwrite_existing);

  // One listener process per scale set, ARC's shape.
  footprint theirs;
  double listeners_ready_s = 0;
  if (listeners > 0) {
    auto built = testenv::run_command({std::string{HEADROOM_SOURCE_DIR} + "/tests/peers/scaleset-listener/build.sh", dir + "/listener"});
    if (built.exit_code != 0) {
      std::fprintf(stderr, "many_scale_sets_bench: building the listener: %s\n", built.err.c_str());
      return 1;
    }
    std::vector<std::unique_ptr<testenv::child_process>> procs;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < listeners; ++i)
      procs.push_back(std::make_unique<testenv::child_process>(
          std::vector<std::string>{dir + "/listener", "--url", e.peer->http_url() + "/headroom-org", "--token", pat, "--name",
                                   set_name("arc", i)},
          std::vector<std::string>{"HOME=" + dir}, dir + "/listener-" + std::to_string(i) + ".log"));
    auto held = [&] {
      auto lv = look(e, "arc");
      int n = 0;
      for (const auto& [name, set] : lv.ids)
        n += lv.sessions[set] > 0;
      return n == listeners;
    };
    if (!eventually(held, std::chrono::minutes(10))) {
      std::fprintf(stderr, "many_scale_sets_bench: the listeners never all held their sessions\n%s\n", procs.front()->log().c_str());
      return 1;
    }
    listeners_ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<pid_t> pids;
    for (const auto& p : procs)
      pids.push_back(p->pid());
    theirs = idle_footprint(pids, std::chrono::seconds(idle));
  }

  std::printf("{\"mode\":\"startup\",\"scale_sets\":%d,\"nodes\":%d,\"runner_pods\":%d,\"seconds\":%.1f}\n", sets, nodes + 1, runner_pods,
              startup_s);
  if (restart > 0)
    std::printf("{\"mode\":\"warm_restart\",\"scale_sets\":%d,\"seconds\":%.1f,\"placeholders_placed_anew\":%d,"
                "\"polls_below_the_pair\":%d,\"most_of_one_scale_set\":%d}\n",
                sets, restart_s, replaced, short_polls, most_short);
  std::printf("{\"mode\":\"decision\",\"scale_sets\":%d,\"runner_pods\":%d,\"decisions\":%.0f,\"p50_le_ms\":%.3f,\"p99_le_ms\":%.3f,"
              "\"within_1ms\":%.4f}\n",
              sets, runner_pods, decisions, 1e3 * bench::bucket_quantile(decision, 0.5), 1e3 * bench::bucket_quantile(decision, 0.99),
              bench::fraction_within(decision, 0.001));
  std::printf("{\"mode\":\"idle\",\"who\":\"headroom\",\"scale_sets\":%d,\"rss_mib\":%.1f,\"peak_rss_mib\":%.1f,\"cpu_core_pct\":%.2f,"
              "\"threads\":%d,\"fds\":%d,\"sockets\":%d}\n",
              sets, ours.rss_mib, peak_rss_mib, ours.cpu_pct, ours.threads, ours.fds, ours.sockets);
  std::printf("{\"mode\":\"propagation\",\"changes\":%zu,\"missed\":%d,\"down_p50_ms\":%.0f,\"down_p99_ms\":%.0f,\"down_max_ms\":%.0f,"
              "\"up_p50_ms\":%.0f,\"up_p99_ms\":%.0f,\"up_max_ms\":%.0f,\"up_ahead_of_bench_watch\":%d,\"up_ahead_max_ms\":%.1f}\n",
              done.size(), missed, percentile(down, 0.5), percentile(down, 0.99), down.empty() ? 0 : *std::max_element(down.begin(), down.end()),
              percentile(up, 0.5), percentile(up, 0.99), up.empty() ? 0 : *std::max_element(up.begin(), up.end()), ahead, ahead_max_ms);
  std::printf("{\"mode\":\"propagation_as_the_peer_recorded\",\"down_p50_ms\":%.0f,\"down_p99_ms\":%.0f,\"down_max_ms\":%.0f,"
              "\"up_p50_ms\":%.0f,\"up_p99_ms\":%.0f,\"up_max_ms\":%.0f}\n",
              percentile(down_recorded, 0.5), percentile(down_recorded, 0.99),
              down_recorded.empty() ? 0 : *std::max_element(down_recorded.begin(), down_recorded.end()), percentile(up_recorded, 0.5),
              percentile(up_recorded, 0.99), up_recorded.empty() ? 0 : *std::max_element(up_recorded.begin(), up_recorded.end()));
  std::printf("{\"mode\":\"delete_seen_by_the_bench_watch\",\"deletes\":%zu,\"p50_ms\":%.0f,\"p99_ms\":%.0f,\"max_ms\":%.0f}\n",
              bench_watch.size(), percentile(bench_watch, 0.5), percentile(bench_watch, 0.99),
              bench_watch.empty() ? 0 : *std::max_element(bench_watch.begin(), bench_watch.end()));
  std::printf("{\"mode\":\"propagation_inside_headroom\",\"polls\":%.0f,\"p50_le_ms\":%.0f,\"p99_le_ms\":%.0f}\n",
              polls_inside, polls_inside > 0 ? 1e3 * bench::bucket_quantile(inside, 0.5) : 0.0,
              polls_inside > 0 ? 1e3 * bench::bucket_quantile(inside, 0.99) : 0.0);
  hops.first.print("drop");
  hops.second.print("rise");
  for (const char* hop : {"event_to_monitor", "monitor_to_judged", "judged_to_published", "published_to_poll", "event_to_poll"}) {
    const std::string label = std::string{"hop=\""} + hop + "\"";
    const auto b = bench::buckets_since(bench::buckets(metrics_after, "headroom_capacity_hop_seconds", label),
                                        bench::buckets(metrics_before, "headroom_capacity_hop_seconds", label));
    const double n = b.empty() ? 0.0 : b.rbegin()->second;
    std::printf("{\"mode\":\"hop_histogram\",\"hop\":\"%s\",\"n\":%.0f,\"p50_le_ms\":%.1f,\"p99_le_ms\":%.1f}\n", hop, n,
                n > 0 ? 1e3 * bench::bucket_quantile(b, 0.5) : 0.0, n > 0 ? 1e3 * bench::bucket_quantile(b, 0.99) : 0.0);
  }
  // The Kubernetes transport's I/O thread over the phase: how long its turns were busy, how late it
  // woke from its waits (the CPU elsewhere).
  for (const char* name : {"headroom_kubernetes_io_busy_seconds", "headroom_kubernetes_io_wake_late_seconds"}) {
    const auto b = bench::buckets_since(bench::buckets(metrics_after, name, ""), bench::buckets(metrics_before, name, ""));
    const double n = b.empty() ? 0.0 : b.rbegin()->second;
    std::printf("{\"mode\":\"io_thread\",\"histogram\":\"%s\",\"turns\":%.0f,\"p50_le_ms\":%.2f,\"p99_le_ms\":%.2f,\"p9999_le_ms\":%.1f}\n", name,
                n, n > 0 ? 1e3 * bench::bucket_quantile(b, 0.5) : 0.0, n > 0 ? 1e3 * bench::bucket_quantile(b, 0.99) : 0.0,
                n > 0 ? 1e3 * bench::bucket_quantile(b, 0.9999) : 0.0);
  }
  const auto count = [](const std::map<double, double>& b) { return b.empty() ? 0.0 : b.rbegin()->second; };
  // Requests by verb and resource ("patch scalesets": 12) over the phase.
  std::map<std::string, double> by_call;
  const auto count_calls = [&](const std::string& text, double sign) {
    std::istringstream in{text};
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("headroom_kubernetes_requests_total{", 0) != 0)
        continue;
      const auto label = [&](const std::string& name) {
        const auto at = line.find(name + "=\"");
        return at == std::string::npos ? std::string{} : line.substr(at + name.size() + 2, line.find('"', at + name.size() + 2) - at - name.size() - 2);
      };
      by_call[label("verb") + " " + label("resource")] += sign * std::stod(line.substr(line.rfind(' ') + 1));
    }
  };
  count_calls(metrics_after, 1);
  count_calls(metrics_before, -1);
  std::string by_verb;
  for (const auto& [call, n] : by_call)
    if (n > 0)
      by_verb += ",\"" + call + "\":" + std::to_string(static_cast<int64_t>(n));
  const auto [go_events, go_resumed] = go.counts();
  std::printf("{\"mode\":\"go_client_watch\",\"events\":%zu,\"resumed\":%d}\n", go_events, go_resumed);
  std::printf("{\"mode\":\"kubernetes_during_changes\",\"pod_watches_resumed\":%.0f,\"pod_watch_handovers\":%.0f,"
              "\"urgent_requests\":%.0f,\"urgent_wait_p99_le_ms\":%.0f,"
              "\"normal_requests\":%.0f,\"normal_wait_p50_le_ms\":%.0f,\"normal_wait_p99_le_ms\":%.0f,"
              "\"background_requests\":%.0f,\"background_wait_p50_le_ms\":%.0f,\"background_wait_p99_le_ms\":%.0f%s}\n",
              pod_watches, pod_handovers, count(urgent_wait), 1e3 * bench::bucket_quantile(urgent_wait, 0.99), count(normal_wait),
              1e3 * bench::bucket_quantile(normal_wait, 0.5), 1e3 * bench::bucket_quantile(normal_wait, 0.99),
              count(background_wait), 1e3 * bench::bucket_quantile(background_wait, 0.5),
              1e3 * bench::bucket_quantile(background_wait, 0.99), by_verb.c_str());
  if (objects > 0)
    std::printf("{\"mode\":\"object_edits\",\"scale_sets\":%d,\"edits\":%d,\"replaced\":%zu,\"apply_to_replaced_p50_ms\":%.0f,"
                "\"apply_to_replaced_max_ms\":%.0f,\"advertised\":%zu,\"apply_to_poll_p50_ms\":%.0f,"
                "\"apply_to_poll_max_ms\":%.0f,\"edited_kept_session\":%d,\"others_session_changed\":%d,"
                "\"others_polls_below_pair\":%d}\n",
                sets, edits, edited.apply_to_replaced_ms.size(), percentile(edited.apply_to_replaced_ms, 0.5),
                edited.apply_to_replaced_ms.empty() ? 0 : *std::max_element(edited.apply_to_replaced_ms.begin(), edited.apply_to_replaced_ms.end()),
                edited.apply_to_poll_ms.size(), percentile(edited.apply_to_poll_ms, 0.5),
                edited.apply_to_poll_ms.empty() ? 0 : *std::max_element(edited.apply_to_poll_ms.begin(), edited.apply_to_poll_ms.end()),
                edited.kept_session, edited.others_session_changed, edited.others_polls_below);
  if (objects > 0) {
    auto most = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
    std::printf("{\"mode\":\"object_edits_split\",\"matched\":%zu,\"apply_to_bench_watch_p50_ms\":%.0f,\"apply_to_bench_watch_max_ms\":%.0f,"
                "\"bench_watch_to_replaced_p50_ms\":%.0f,\"bench_watch_to_replaced_max_ms\":%.0f}\n",
                edited.apply_to_bench_watch_ms.size(), percentile(edited.apply_to_bench_watch_ms, 0.5), most(edited.apply_to_bench_watch_ms),
                percentile(edited.bench_watch_to_replaced_ms, 0.5), most(edited.bench_watch_to_replaced_ms));
  }
  if (listeners > 0)
    std::printf("{\"mode\":\"idle\",\"who\":\"scaleset-listener x%d\",\"ready_s\":%.1f,\"rss_mib\":%.1f,\"cpu_core_pct\":%.2f,\"threads\":%d,"
                "\"fds\":%d,\"sockets\":%d}\n",
                listeners, listeners_ready_s, theirs.rss_mib, theirs.cpu_pct, theirs.threads, theirs.fds, theirs.sockets);
  std::printf("\n| | scale sets | RSS | CPU (idle, of one core) | threads | sockets |\n|---|---|---|---|---|---|\n"
              "| headroom, one process | %d | %.0f MiB | %.2f %% | %d | %d |\n",
              sets, ours.rss_mib, ours.cpu_pct, ours.threads, ours.sockets);
  if (listeners > 0)
    std::printf("| one scaleset listener per scale set | %d | %.0f MiB | %.2f %% | %d | %d |\n", listeners, theirs.rss_mib, theirs.cpu_pct,
                theirs.threads, theirs.sockets);
  return 0;
}
