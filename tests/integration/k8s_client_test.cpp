// headroom's Kubernetes client against the real kube-apiserver: list/watch at scale, bookmarks,
// 410 Gone and relist, an apiserver restart under a watch, RBAC errors, eviction blocked by a PDB,
// writes and their error kinds.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <future>
#include <mutex>
#include <set>

#include "adapters/k8s/client.hpp"
#include "adapters/k8s/events.hpp"
#include "adapters/k8s/informer.hpp"
#include "adapters/k8s/informer_slice.hpp"
#include "adapters/k8s/leader_election.hpp"
#include "testenv/cluster_fixture.hpp"

using namespace std::chrono_literals;
using namespace headroom::k8s;
using headroom::testenv::cluster;
using headroom::testenv::eventually;

namespace {

struct k8s_fixture : ::testing::Test {
  void SetUp() override {
    HEADROOM_REQUIRE_CLUSTER(shared_cluster);
    c = shared_cluster;
    transport::options topts;
    topts.clock = &headroom::runtime::real_clock();
    topts.qps = 2000;  // bulk setup; the production default (50/100) is exercised by its own test
    topts.burst = 2000;
    io = std::make_unique<transport>(topts);
    auto conn = load_kubeconfig(c->kubeconfig());
    ASSERT_TRUE(std::holds_alternative<connection>(conn)) << std::get<connection_error>(conn).message;
    retry_policy bulk_retries;
    bulk_retries.max_attempts = 10;  // 10k creates meet the apiserver's priority-and-fairness 429s
    admin = std::make_unique<client>(std::get<connection>(conn), *io, bulk_retries);
  }

  // Runs one asynchronous call and waits for its result.
  api_result sync(const std::function<void(api_callback)>& call) {
    auto p = std::make_shared<std::promise<api_result>>();
    auto f = p->get_future();
    call([p](api_result r) { p->set_value(std::move(r)); });
    if (f.wait_for(60s) != std::future_status::ready)
      return api_error{api_error::kind::transport, "", "", "", "", 0, "", "test timed out"};
    return f.get();
  }

  static std::string error_of(const api_result& r) {
    return std::holds_alternative<api_error>(r) ? std::get<api_error>(r).describe() : "";
  }

  void ensure_namespace(const std::string& ns) {
    auto r = sync([&](api_callback cb) {
      admin->create(kinds::namespaces, "", R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + "\"}}",
                    std::move(cb));
    });
    if (auto* e = std::get_if<api_error>(&r)) {
      ASSERT_EQ(e->what, api_error::kind::already_exists) << e->describe();
    }
  }

  // A pod the default scheduler leaves alone (schedulerName none): pure API objects.
  static std::string parked_pod(const std::string& ns, const std::string& name, const std::string& label = "a") {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","namespace":")" + ns +
           R"(","labels":{"set":")" + label + R"("}},"spec":{"schedulerName":"none","containers":[{"name":"c","image":"pause",
           "resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}})";
  }

  // Creates `n` pods concurrently (up to the transport's rate) and waits for all. A create whose
  // response was lost (the connection broke after the request went out) may have happened: as
  // every caller of client::create must, it is retried and AlreadyExists on a retry means done.
  void create_pods(const std::string& ns, int n, const std::string& prefix) {
    struct state {
      std::atomic<int> done{0}, failed{0};
      std::promise<void> all;
      std::mutex m;
      std::string first_error;
    };
    auto st = std::make_shared<state>();
    std::function<void(int, int)> create_one = [&, st](int i, int attempt) {
      admin->create(kinds::pods, ns, parked_pod(ns, prefix + std::to_string(i)), [&, st, i, attempt](api_result r) {
        if (auto* e = std::get_if<api_error>(&r)) {
          if (e->what == api_error::kind::transport && attempt < 3)
            return create_one(i, attempt + 1);
          if (!(e->what == api_error::kind::already_exists && attempt > 0)) {
            ++st->failed;
            std::lock_guard<std::mutex> g{st->m};
            if (st->first_error.empty())
              st->first_error = e->describe();
          }
        }
        if (++st->done == n)
          st->all.set_value();
      });
    };
    for (int i = 0; i < n; ++i)
      create_one(i, 0);
    ASSERT_EQ(st->all.get_future().wait_for(300s), std::future_status::ready);
    ASSERT_EQ(st->failed.load(), 0) << st->first_error;
  }

  cluster* c = nullptr;
  std::unique_ptr<transport> io;
  std::unique_ptr<client> admin;
};

informer<pod>::options pods_in(const std::string& ns) {
  informer<pod>::options o;
  o.kind = kinds::pods;
  o.ns = ns;
  return o;
}

delete_options grace(int64_t seconds) {
  delete_options d;
  d.grace_period_seconds = seconds;
  return d;
}

delete_options with_uid(const std::string& uid) {
  delete_options d;
  d.precondition_uid = uid;
  return d;
}

// Records an informer's events as "added:name", "modified:name", "deleted:name".
struct recorder {
  std::mutex m;
  std::vector<std::string> events;
  template <class Event>
  void operator()(const Event& e) {
    static const char* names[] = {"added", "modified", "deleted", "resync"};
    std::lock_guard<std::mutex> g{m};
    events.push_back(std::string{names[static_cast<int>(e.type)]} + ":" + e.object->meta.name);
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> g{m};
    auto out = std::move(events);
    events.clear();
    return out;
  }
  size_t size() {
    std::lock_guard<std::mutex> g{m};
    return events.size();
  }
};

}  // namespace

// 10,000 pods: a watching informer sees every creation once; a second informer lists them in
// pages of 500 and holds all 10,000 with working indexes.
TEST_F(k8s_fixture, k8s_list_watch_10k_objects) {
  const std::string ns = "bulk";
  ensure_namespace(ns);
  auto watcher = informer<pod>::make(*admin, pods_in(ns));
  auto rec = std::make_shared<recorder>();
  watcher->subscribe([rec](const auto& e) { (*rec)(e); });
  watcher->start();
  ASSERT_TRUE(eventually([&] { return watcher->synced(); }, 30s));
  const auto t0 = std::chrono::steady_clock::now();
  create_pods(ns, 10'000, "p-");
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return watcher->size() == 10'000; }, 120s)) << watcher->size();
  const auto t2 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "10k creates: %lld ms; watch caught up %lld ms later; watches %llu; lists %llu\n",
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count()),
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(t2 - t1).count()),
               static_cast<unsigned long long>(watcher->counters().watches.load()),
               static_cast<unsigned long long>(watcher->counters().lists.load()));
  const auto events = rec->take();
  EXPECT_EQ(std::set<std::string>(events.begin(), events.end()).size(), 10'000u) << "each creation exactly once";
  EXPECT_EQ(watcher->counters().decode_errors.load(), 0u);

  auto lister = informer<pod>::make(*admin, pods_in(ns));
  lister->add_default_indexes();
  lister->start();
  ASSERT_TRUE(eventually([&] { return lister->synced(); }, 120s));
  EXPECT_EQ(lister->size(), 10'000u);
  // 10,000 pods in pages of 500: 20 pages, or 21 when the server cannot tell the 20th is the last;
  // on a machine slow enough for etcd's compaction (every 10 s here) to expire the continue
  // token, one more unpaginated list (client-go's fallback).
  const auto pages = lister->counters().list_pages.load();
  const auto fallbacks = lister->counters().list_full_fallbacks.load();
  EXPECT_GE(pages, fallbacks > 0 ? 2u : 20u) << "paginated";
  EXPECT_LE(pages, 21u + fallbacks);
  EXPECT_EQ(lister->counters().lists.load(), 1u + fallbacks) << "no relist beyond the fallback";
  EXPECT_EQ(lister->by_index("namespace", ns).size(), 10'000u);
  EXPECT_EQ(lister->by_index("label", "set=a").size(), 10'000u);
  auto one = lister->get(ns, "p-4242");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->spec->requests.cpu_milli, 100);
  watcher->stop();
  lister->stop();
}

// With allowWatchBookmarks the server sends BOOKMARKs; the informer's resourceVersion follows
// them even when nothing in its own namespace changes.
TEST_F(k8s_fixture, k8s_bookmarks_advance_the_resource_version) {
  ensure_namespace("quiet");
  ensure_namespace("busy");
  auto o = pods_in("quiet");
  o.watch_timeout = 8s;  // the server sends a bookmark shortly before a watch's timeout
  auto inf = informer<pod>::make(*admin, o);
  inf->start();
  ASSERT_TRUE(eventually([&] { return inf->synced(); }, 30s));
  const auto before = std::stoll(inf->resource_version());
  create_pods("busy", 5, "b-");
  EXPECT_TRUE(eventually([&] { return std::stoll(inf->resource_version()) > before; }, 30s))
      << "no bookmark moved the resourceVersion past " << before;
  EXPECT_EQ(inf->size(), 0u);
  inf->stop();
}

// The watch is down while the cluster changes and comes back with a compacted resourceVersion:
// the server answers 410 Gone, the informer relists and reports exactly what changed — no
// transition lost, none reported twice, nothing unchanged reported. (ConfigMaps bypass the watch
// cache in the test cluster and etcd is compacted every 10 s, so the 410 is the real one.)
TEST_F(k8s_fixture, k8s_gone_relists_without_lost_or_duplicated_transitions) {
  const std::string ns = "gone";
  ensure_namespace(ns);
  for (int i = 0; i < 4; ++i) {
    auto r = sync([&](api_callback cb) {
      admin->create(kinds::configmaps, ns,
                    R"({"metadata":{"name":"cm-)" + std::to_string(i) + R"(","labels":{"set":"a"}},"data":{"k":"v"}})",
                    std::move(cb));
    });
    ASSERT_EQ(error_of(r), "");
  }
  informer<unstructured>::options o;
  o.kind = kinds::configmaps;
  o.ns = ns;
  o.label_selector = "set";  // ours only: KCM publishes kube-root-ca.crt into every namespace
  auto inf = informer<unstructured>::make(*admin, o);
  auto rec = std::make_shared<recorder>();
  inf->subscribe([rec](const auto& e) { (*rec)(e); });
  inf->start();
  ASSERT_TRUE(eventually([&] { return inf->synced() && inf->watching(); }, 30s));
  EXPECT_EQ(rec->take().size(), 4u);
  const auto listed_at = inf->resource_version();

  inf->interrupt_watch_for_test();
  ASSERT_TRUE(eventually([&] { return !inf->watching(); }, 10s));
  ASSERT_EQ(error_of(sync([&](api_callback cb) { admin->remove(kinds::configmaps, ns, "cm-0", {}, std::move(cb)); })), "");
  ASSERT_EQ(error_of(sync([&](api_callback cb) {
              admin->merge_patch(kinds::configmaps, ns, "cm-1", R"({"metadata":{"labels":{"set":"b"}}})", std::move(cb));
            })),
            "");
  ASSERT_EQ(error_of(sync([&](api_callback cb) {
              admin->create(kinds::configmaps, ns, R"({"metadata":{"name":"cm-new","labels":{"set":"c"}}})", std::move(cb));
            })),
            "");
  // Wait until etcd has compacted past the informer's resourceVersion: a plain watch from it is
  // then refused with 410.
  ASSERT_TRUE(eventually([&] {
    auto got = std::make_shared<std::promise<bool>>();
    auto answered = std::make_shared<std::atomic<bool>>(false);
    watch_options wo;
    wo.resource_version = listed_at;
    auto id = admin->watch(
        kinds::configmaps, ns, wo,
        [got, answered](std::string_view line) {
          if (!answered->exchange(true))
            got->set_value(line.find("\"code\":410") != std::string_view::npos);
        },
        [got, answered](std::optional<api_error> e) {
          if (!answered->exchange(true))
            got->set_value(e && e->what == api_error::kind::gone);
        });
    auto f = got->get_future();
    const bool gone = f.wait_for(2s) == std::future_status::ready && f.get();
    admin->cancel(id);
    return gone;
  }, 60s)) << "etcd never compacted past " << listed_at;
  const auto relists_before = inf->counters().relists_410.load();

  inf->resume_watch_for_test(listed_at);
  ASSERT_TRUE(eventually([&] { return inf->counters().relists_410.load() > relists_before && inf->watching(); }, 30s));
  ASSERT_TRUE(eventually([&] { return rec->size() >= 3; }, 10s));
  std::this_thread::sleep_for(1s);  // anything extra would arrive now
  auto events = rec->take();
  std::sort(events.begin(), events.end());
  EXPECT_EQ(events, (std::vector<std::string>{"added:cm-new", "deleted:cm-0", "modified:cm-1"}));
  ASSERT_NE(inf->get(ns, "cm-1"), nullptr);
  EXPECT_EQ(*inf->get(ns, "cm-1")->meta.label("set"), "b");
  EXPECT_EQ(inf->get(ns, "cm-0"), nullptr);
  inf->stop();
}

// One informer shared by several consumers, each seeing one label value's objects (the scale
// sets' pods): lists, gets and events stay within a slice, a relabelled pod moves between slices,
// an unsubscribed slice hears nothing, and a value nobody asked for reaches no one.
TEST_F(k8s_fixture, k8s_one_informer_sliced_by_label) {
  const std::string ns = "slices";
  ensure_namespace(ns);
  auto make = [&](const std::string& name, const std::string& set) {
    auto r = sync([&](api_callback cb) { admin->create(kinds::pods, ns, parked_pod(ns, name, set), std::move(cb)); });
    ASSERT_EQ(error_of(r), "");
  };
  make("a-1", "a");
  make("a-2", "a");
  make("b-1", "b");
  make("c-1", "c");
  auto o = pods_in(ns);
  o.label_selector = "set in (a,b,c)";
  auto router = label_router<pod>::make(informer<pod>::make(*admin, o), "set");
  auto a = router->slice("a"), b = router->slice("b");
  recorder ra, rb;
  a->subscribe([&](const informer<pod>::event& e) { ra(e); });
  const auto b_id = b->subscribe([&](const informer<pod>::event& e) { rb(e); });
  EXPECT_EQ(router->subscribers("a"), 1u);
  router->source()->start();
  ASSERT_TRUE(eventually([&] { return a->synced() && ra.size() == 2 && rb.size() == 1; }, 30s)) << ra.size() << " " << rb.size();
  EXPECT_EQ(a->list().size(), 2u);
  EXPECT_EQ(b->list().size(), 1u);
  EXPECT_NE(a->get(ns, "a-1"), nullptr);
  EXPECT_EQ(a->get(ns, "b-1"), nullptr) << "another slice's pod";
  EXPECT_EQ(a->get(ns, "c-1"), nullptr);
  EXPECT_EQ(router->source()->size(), 4u) << "one cache holds them all";
  ra.take();
  rb.take();

  // a-2 is relabelled to b: it leaves a and enters b.
  auto r = sync([&](api_callback cb) { admin->merge_patch(kinds::pods, ns, "a-2", R"({"metadata":{"labels":{"set":"b"}}})", std::move(cb)); });
  ASSERT_EQ(error_of(r), "");
  ASSERT_TRUE(eventually([&] { return ra.size() == 1 && rb.size() == 1; }, 30s));
  EXPECT_EQ(ra.take(), std::vector<std::string>{"deleted:a-2"});
  EXPECT_EQ(rb.take(), std::vector<std::string>{"added:a-2"});
  EXPECT_EQ(a->list().size(), 1u);
  EXPECT_EQ(b->list().size(), 2u);
  EXPECT_NE(b->get(ns, "a-2"), nullptr);

  // c's pod changes: no slice hears it. b unsubscribes: b-1's deletion reaches nobody; a still hears a-1's.
  r = sync([&](api_callback cb) { admin->merge_patch(kinds::pods, ns, "c-1", R"({"metadata":{"annotations":{"x":"1"}}})", std::move(cb)); });
  ASSERT_EQ(error_of(r), "");
  b->unsubscribe(b_id);
  EXPECT_EQ(router->subscribers("b"), 0u);
  r = sync([&](api_callback cb) { admin->remove(kinds::pods, ns, "b-1", grace(0), std::move(cb)); });
  ASSERT_EQ(error_of(r), "");
  r = sync([&](api_callback cb) { admin->remove(kinds::pods, ns, "a-1", grace(0), std::move(cb)); });
  ASSERT_EQ(error_of(r), "");
  ASSERT_TRUE(eventually([&] { return ra.size() >= 1 && router->source()->size() == 2; }, 30s));
  const auto heard = ra.take();  // the deletion, perhaps after its deletionTimestamp's update
  ASSERT_FALSE(heard.empty());
  EXPECT_EQ(heard.back(), "deleted:a-1");
  for (const auto& h : heard)
    EXPECT_NE(h.find(":a-1"), std::string::npos) << h;
  EXPECT_EQ(rb.size(), 0u);
  EXPECT_EQ(a->list().size(), 0u);
  router->source()->stop();
}

// The apiserver restarts under an open watch: the informer reconnects and sees later changes.
TEST_F(k8s_fixture, k8s_watch_survives_an_apiserver_restart) {
  const std::string ns = "restart";
  ensure_namespace(ns);
  auto inf = informer<pod>::make(*admin, pods_in(ns));
  inf->start();
  ASSERT_TRUE(eventually([&] { return inf->synced(); }, 30s));
  ASSERT_TRUE(c->restart_apiserver());
  create_pods(ns, 3, "after-");
  EXPECT_TRUE(eventually([&] { return inf->size() == 3; }, 60s)) << inf->size();
  EXPECT_GE(inf->counters().watches.load(), 2u) << "the watch was re-established";
  inf->stop();
}

// The plain user may do nothing: the error says who, what and why.
TEST_F(k8s_fixture, k8s_rbac_forbidden_is_surfaced_clearly) {
  auto conn = load_kubeconfig(c->kubeconfig(), "user");
  ASSERT_TRUE(std::holds_alternative<connection>(conn));
  client user{std::get<connection>(conn), *io};
  auto r = sync([&](api_callback cb) { user.list(kinds::pods, "default", {}, std::move(cb)); });
  ASSERT_TRUE(std::holds_alternative<api_error>(r));
  const auto& e = std::get<api_error>(r);
  EXPECT_EQ(e.what, api_error::kind::forbidden);
  EXPECT_EQ(e.status, 403);
  EXPECT_EQ(e.reason, "Forbidden");
  EXPECT_EQ(e.describe(),
            "list pods default: 403 Forbidden: pods is forbidden: User \"headroom-user\" cannot list resource \"pods\" "
            "in API group \"\" in the namespace \"default\"");
  EXPECT_EQ(e.describe().find(c->user_token()), std::string::npos);
}

// Writes and their error kinds: create twice (AlreadyExists), get a missing object (NotFound),
// delete with a stale uid precondition (Conflict), JSON patch removing one scheduling gate,
// status subresource patch, cordon, an Event, retry on conflict.
TEST_F(k8s_fixture, k8s_writes_and_error_kinds) {
  const std::string ns = "writes";
  ensure_namespace(ns);
  const std::string gated = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"gated","namespace":"writes"},
    "spec":{"schedulingGates":[{"name":"headroom.dev/a"},{"name":"headroom.dev/b"}],
    "containers":[{"name":"c","image":"pause"}]}})";
  ASSERT_EQ(error_of(sync([&](api_callback cb) { admin->create(kinds::pods, ns, gated, std::move(cb)); })), "");
  auto again = sync([&](api_callback cb) { admin->create(kinds::pods, ns, gated, std::move(cb)); });
  ASSERT_TRUE(std::holds_alternative<api_error>(again));
  EXPECT_EQ(std::get<api_error>(again).what, api_error::kind::already_exists);
  EXPECT_EQ(std::get<api_error>(again).describe(), "create pods writes/gated: 409 AlreadyExists: pods \"gated\" already exists");

  auto missing = sync([&](api_callback cb) { admin->get(kinds::pods, ns, "nope", std::move(cb)); });
  ASSERT_TRUE(std::holds_alternative<api_error>(missing));
  EXPECT_EQ(std::get<api_error>(missing).what, api_error::kind::not_found);

  // Remove exactly the first gate (index 0), guarded by a test op.
  auto ungated = sync([&](api_callback cb) {
    admin->json_patch(kinds::pods, ns, "gated",
                      R"([{"op":"test","path":"/spec/schedulingGates/0/name","value":"headroom.dev/a"},
                          {"op":"remove","path":"/spec/schedulingGates/0"}])",
                      std::move(cb));
  });
  ASSERT_EQ(error_of(ungated), "");
  auto p = decode_pod(std::get<std::string>(ungated));
  ASSERT_TRUE(std::holds_alternative<pod>(p));
  EXPECT_EQ(std::get<pod>(p).spec->scheduling_gates, (std::vector<std::string>{"headroom.dev/b"}));

  auto status = sync([&](api_callback cb) {
    admin->merge_patch(kinds::pods, ns, "gated",
                       R"({"status":{"conditions":[{"type":"headroom.dev/Counted","status":"True"}]}})", std::move(cb),
                       "status");
  });
  ASSERT_EQ(error_of(status), "");

  auto stale = sync([&](api_callback cb) {
    admin->remove(kinds::pods, ns, "gated", with_uid("00000000-0000-0000-0000-000000000000"), std::move(cb));
  });
  ASSERT_TRUE(std::holds_alternative<api_error>(stale));
  EXPECT_EQ(std::get<api_error>(stale).what, api_error::kind::conflict) << error_of(stale);

  const std::string node = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"writes-node",
    "annotations":{"kwok.x-k8s.io/node":"fake"}},"status":{"allocatable":{"cpu":"2","memory":"4Gi","pods":"10"}}})";
  ASSERT_EQ(error_of(sync([&](api_callback cb) { admin->create(kinds::nodes, "", node, std::move(cb)); })), "");
  auto cordoned = sync([&](api_callback cb) { admin->cordon("writes-node", true, std::move(cb)); });
  ASSERT_EQ(error_of(cordoned), "");
  EXPECT_TRUE(std::get<headroom::k8s::node>(decode_node(std::get<std::string>(cordoned))).unschedulable);

  // An events.k8s.io/v1 Event as the event_recorder writes it (the API validates every field),
  // its series written, and read back through core/v1 as kubectl describe reads it.
  const resource_kind events_v1{"events.k8s.io", "v1", "events", true};
  headroom::k8s::event_record rec{{"v1", "Pod", ns, "gated", ""}, "Normal", "GateRemoved", "Admit",
                                  "queue admitted the pod " + std::string(2000, 'x')};  // a note over the 1 KiB limit is cut
  const double at = 1.7e9;
  auto ev = sync([&](api_callback cb) {
    admin->create(events_v1, ns, encode_event(rec, "gated.1", at, "headroom.dev/headroom", "test-instance"), std::move(cb));
  });
  ASSERT_EQ(error_of(ev), "");
  ASSERT_EQ(error_of(sync([&](api_callback cb) {
              admin->merge_patch(events_v1, ns, "gated.1", encode_series_patch(3, at + 5), std::move(cb));
            })),
            "");
  auto core = sync([&](api_callback cb) { admin->get(kinds::events, ns, "gated.1", std::move(cb)); });
  ASSERT_EQ(error_of(core), "");
  const auto e = std::get<event>(decode_event(std::get<std::string>(core)));
  EXPECT_EQ(e.reason, "GateRemoved");
  EXPECT_EQ(e.involved_name, "gated");
  EXPECT_EQ(e.message.size(), 1024u);
  // core/v1 shows an events.k8s.io series as its own series (count stays 0, deprecated).
  simdjson::dom::parser json;
  int64_t series_count = 0;
  EXPECT_EQ(json.parse(std::get<std::string>(core))["series"]["count"].get(series_count), simdjson::SUCCESS);
  EXPECT_EQ(series_count, 3);
  // About a cluster-scoped object: in the default namespace.
  headroom::k8s::event_record node_rec{{"v1", "Node", "", "writes-node", ""}, "Warning", "ReclaimDrainFailed", "Drain", "a note"};
  EXPECT_EQ(error_of(sync([&](api_callback cb) {
              admin->create(events_v1, event_namespace(node_rec.regarding),
                            encode_event(node_rec, "writes-node.1", at, "headroom.dev/headroom", "test-instance"), std::move(cb));
            })),
            "");

  // retry_on_conflict: a PUT with a stale resourceVersion conflicts once, the retry reads afresh.
  ASSERT_EQ(error_of(sync([&](api_callback cb) {
              admin->create(kinds::configmaps, ns, R"({"metadata":{"name":"counter"},"data":{"n":"0"}})", std::move(cb));
            })),
            "");
  int attempts = 0;
  auto updated = sync([&](api_callback done) {
    retry_on_conflict(
        [&](std::function<void(api_result)> next) {
          const bool first = attempts++ == 0;
          admin->get(kinds::configmaps, ns, "counter", [&, first, next](api_result got) {
            auto u = decode_unstructured(std::get<std::string>(got));
            const auto rv = first ? "1" : std::get<unstructured>(u).meta.resource_version;  // first try: stale
            admin->replace(kinds::configmaps, ns, "counter",
                           R"({"metadata":{"name":"counter","resourceVersion":")" + rv + R"("},"data":{"n":"1"}})", next);
          });
        },
        std::move(done));
  });
  EXPECT_EQ(error_of(updated), "");
  EXPECT_EQ(attempts, 2);
}

// A PodDisruptionBudget refuses the eviction with 429: its own error kind. Without the PDB the
// eviction goes through.
TEST_F(k8s_fixture, k8s_eviction_blocked_by_a_pdb) {
  const std::string ns = "evict";
  ensure_namespace(ns);
  const std::string node = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"evict-node",
    "annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"kubernetes.io/hostname":"evict-node"}},
    "status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"10"},"capacity":{"cpu":"4","memory":"8Gi","pods":"10"}}})";
  auto created = sync([&](api_callback cb) { admin->create(kinds::nodes, "", node, std::move(cb)); });
  ASSERT_EQ(error_of(created), "");
  const std::string guarded = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"guarded","namespace":"evict",
    "labels":{"app":"guarded"}},"spec":{"nodeSelector":{"kubernetes.io/hostname":"evict-node"},
    "terminationGracePeriodSeconds":0,"containers":[{"name":"c","image":"pause"}]}})";
  ASSERT_EQ(error_of(sync([&](api_callback cb) { admin->create(kinds::pods, ns, guarded, std::move(cb)); })), "");
  const std::string pdb = R"({"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"keep-one"},
    "spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"guarded"}}}})";
  ASSERT_EQ(error_of(sync([&](api_callback cb) { admin->create(kinds::pod_disruption_budgets, ns, pdb, std::move(cb)); })), "");
  // The disruption controller must have counted the running pod before it can refuse.
  ASSERT_TRUE(eventually([&] {
    auto r = sync([&](api_callback cb) { admin->get(kinds::pod_disruption_budgets, ns, "keep-one", std::move(cb)); });
    return std::holds_alternative<std::string>(r) &&
           std::get<std::string>(r).find("\"currentHealthy\":1") != std::string::npos;
  }, 60s));

  auto refused = sync([&](api_callback cb) { admin->evict(ns, "guarded", {}, std::move(cb)); });
  ASSERT_TRUE(std::holds_alternative<api_error>(refused));
  const auto& e = std::get<api_error>(refused);
  EXPECT_EQ(e.what, api_error::kind::disruption_blocked) << e.describe();
  EXPECT_EQ(e.status, 429);
  EXPECT_NE(e.message.find("disruption budget"), std::string::npos) << e.message;

  ASSERT_EQ(error_of(sync([&](api_callback cb) {
              admin->remove(kinds::pod_disruption_budgets, ns, "keep-one", {}, std::move(cb));
            })),
            "");
  auto evicted = sync([&](api_callback cb) { admin->evict(ns, "guarded", grace(0), std::move(cb)); });
  EXPECT_EQ(error_of(evicted), "");
}

// #62: the informer hands its watch over before the server ends it (make-before-break): pods
// created one by one across several handovers are each seen added exactly once and in order.
TEST_F(k8s_fixture, k8s_a_watch_handed_over_before_its_end_loses_and_repeats_nothing) {
  const std::string ns = "handover";
  ensure_namespace(ns);
  auto o = pods_in(ns);
  o.watch_timeout = 4s;  // each watch's successor starts after 3-4 s; the server would end it 2 s later
  o.hand_over = 2s;
  auto inf = informer<pod>::make(*admin, o);
  auto rec = std::make_shared<recorder>();
  inf->subscribe([rec](const auto& e) { (*rec)(e); });
  inf->start();
  ASSERT_TRUE(eventually([&] { return inf->synced(); }, 30s));
  std::vector<std::string> expected;
  for (int i = 0; i < 40; ++i) {  // 12 s of changes, over three or more handovers
    const std::string name = "h-" + std::to_string(i);
    auto r = sync([&](api_callback cb) { admin->create(kinds::pods, ns, parked_pod(ns, name), std::move(cb)); });
    ASSERT_EQ(error_of(r), "");
    expected.push_back("added:" + name);
    std::this_thread::sleep_for(300ms);
  }
  ASSERT_TRUE(eventually([&] { return rec->size() >= expected.size(); }, 30s));
  std::this_thread::sleep_for(1s);  // nothing reported twice after the last either
  EXPECT_EQ(rec->take(), expected);
  EXPECT_GE(inf->counters().handovers.load(), 2u);
  EXPECT_EQ(inf->counters().watch_errors.load(), 0u);
  inf->stop();
}

// Two candidates for one Lease: exactly one leads; a released lease passes to the other at its
// next retry; a leader that dies (stops renewing) is replaced once the lease expires. At no sampled
// moment do two candidates lead.
TEST_F(k8s_fixture, k8s_leader_election_two_contenders_and_hand_over) {
  auto make = [&](const std::string& id) {
    leader_elector::options o;
    o.ns = "kube-system";
    o.name = "headroom-test";
    o.identity = id;
    return leader_elector::make(*admin, o);
  };
  auto a = make("candidate-a");
  auto b = make("candidate-b");
  std::atomic<bool> sampling{true};
  std::atomic<int> both{0};
  std::vector<std::shared_ptr<leader_elector>> all{a, b};
  std::mutex all_mutex;
  std::thread sampler([&] {
    while (sampling) {
      int leaders = 0;
      {
        std::lock_guard<std::mutex> g{all_mutex};
        for (const auto& e : all)
          leaders += e->leading();
      }
      if (leaders > 1)
        ++both;
      std::this_thread::sleep_for(20ms);
    }
  });

  a->start();
  ASSERT_TRUE(eventually([&] { return a->leading(); }, 10s));
  b->start();
  std::this_thread::sleep_for(5s);
  EXPECT_FALSE(b->leading()) << "the lease is held and renewed by a";

  const auto released_at = std::chrono::steady_clock::now();
  a->stop(/*release=*/true);
  ASSERT_TRUE(eventually([&] { return b->leading(); }, 10s));
  EXPECT_LT(std::chrono::steady_clock::now() - released_at, 6s) << "a released lease is taken at the next retry";

  auto c = make("candidate-c");
  {
    std::lock_guard<std::mutex> g{all_mutex};
    all.push_back(c);
  }
  c->start();
  std::this_thread::sleep_for(3s);
  EXPECT_FALSE(c->leading());
  const auto crashed_at = std::chrono::steady_clock::now();
  b->stop(/*release=*/false);  // b dies without a word
  ASSERT_TRUE(eventually([&] { return c->leading(); }, 30s));
  EXPECT_GE(std::chrono::steady_clock::now() - crashed_at, 12s) << "the lease must expire first (15 s, observed locally)";

  auto r = sync([&](api_callback cb) { admin->get(kinds::leases, "kube-system", "headroom-test", std::move(cb)); });
  ASSERT_EQ(error_of(r), "");
  const auto l = std::get<lease>(decode_lease(std::get<std::string>(r)));
  EXPECT_EQ(l.holder_identity, "candidate-c");
  EXPECT_EQ(l.lease_transitions, 2);
  EXPECT_EQ(l.lease_duration_seconds, 15);
  c->stop(true);
  sampling = false;
  sampler.join();
  EXPECT_EQ(both.load(), 0) << "two leaders at once";
}
