// object_catalog (actors/k8s/object_catalog.cpp) under CAF's deterministic test_coordinator: a
// real informer of ScaleSet objects over the scripted API server, and a supervisor played by hand
// (it records what it is asked). Each object's subtree is added once, replaced only for a new
// generation (handed over), stopped when the object goes (its leftover deleted); what cannot run
// is refused in the status; a restarted catalog neither starts again what runs nor keeps what was
// deleted meanwhile. The last test serves a kind whose status the catalog writes (Ready once it
// runs) and whose claim is not its name (a ReactiveTarget's workload).
#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/k8s/object_catalog.hpp"
#include "adapters/k8s/client.hpp"
#include "adapters/k8s/fields.hpp"
#include "messages/type_ids.hpp"
#include "unit/support/actor_fixture.hpp"

using namespace headroom;
using namespace std::chrono_literals;
namespace cap = actors;

namespace {

using journal = std::shared_ptr<std::vector<std::string>>;

// The scale sets' supervisor as the catalog sees it: every add and stop recorded and granted.
runtime::supervisor_actor::behavior_type fake_supervisor(runtime::supervisor_actor::pointer self, journal asked) {
  return {
      [](caf::get_atom) { return msg::supervisor_status{}; },
      [self, asked](runtime::child_spec& spec) {
        asked->push_back("add " + spec.name);
        auto child = spec.start(self->system());
        caf::anon_send_exit(child, caf::exit_reason::user_shutdown);
        return true;
      },
      [asked](msg::stop_child_atom, const std::string& name) {
        asked->push_back("stop " + name);
        return true;
      },
      [](msg::fault_atom, const std::string&) { return int64_t{0}; },
  };
}

std::string object(const std::string& ns, const std::string& name, int generation, const std::string& spec = "{}",
                   const std::string& uid = "") {
  return R"({"apiVersion":"headroom.dev/v1alpha1","kind":"ScaleSet","metadata":{"name":")" + name + R"(","namespace":")" + ns +
         R"(","uid":")" + (uid.empty() ? "uid-" + name : uid) + R"(","generation":)" + std::to_string(generation) +
         R"(,"resourceVersion":")" + std::to_string(100 + generation) + R"("},"spec":)" + spec + "}";
}

struct catalog_fixture : test_support::actor_fixture {
  ~catalog_fixture() override {
    caf::anon_send_exit(catalog, caf::exit_reason::kill);
    caf::anon_send_exit(supervisor, caf::exit_reason::kill);
    sched.run();
    if (objects)
      objects->stop();
  }

  // The informer of namespace team-a, listed with `items`; then the catalog.
  void start(const std::string& items, std::set<std::string> file_names = {}, std::vector<cap::catalog_limit> limits = {}) {
    k8s::informer<k8s::unstructured>::options o;
    o.kind = k8s::resource_kind{"headroom.dev", "v1alpha1", "scalesets", true};
    o.ns = "team-a";
    objects = k8s::informer<k8s::unstructured>::make(kube, o);
    objects->start();
    ASSERT_TRUE(io.answer("GET", "/namespaces/team-a/scalesets", 200,
                          R"({"kind":"ScaleSetList","metadata":{"resourceVersion":"50"},"items":[)" + items + "]}"));
    io.fire_timers();
    supervisor = sys.spawn(fake_supervisor, asked);
    auto opts = std::make_shared<cap::catalog_options>(options());
    if (ready)
      opts->kind.ready_patch = [](int64_t g, const std::string& now) { return cap::ready_condition_patch(g, true, "Running", "runs", now); };
    opts->objects = {objects};
    opts->claim_of = claim_of;
    opts->file_claims = std::move(file_names);
    opts->parent = supervisor;
    opts->kube = &kube;
    opts->memo = memo;
    opts->limits = limits;
    opts->count = [this](const std::string& outcome) { counted.push_back(outcome); };
    // The wiring's build, by hand: a spec holding "bad" is refused, naming the field.
    opts->build = [this](caf::actor_system&, const std::string& json) -> std::variant<cap::catalog_build, std::string> {
      if (json.find("bad") != std::string::npos)
        return std::string{"spec.maxRunners: bad"};
      cap::catalog_build b;
      const auto name = k8s::string_at(json, {"metadata", "name"});
      b.generation = k8s::int_at(json, {"metadata", "generation"}).value_or(0);
      b.leftover = cap::catalog_leftover{k8s::resource_kind{"", "v1", "configmaps", true}, "owner-" + name};
      b.asks["spec.maxRunners"] = k8s::int_at(json, {"spec", "maxRunners"}).value_or(10);
      b.hand_over = [this, name](bool v) { handed->push_back(name + (v ? " kept" : " deleted")); };
      b.running = [this, name](bool on) { runs->push_back(name + (on ? " on" : " off")); };
      b.subtree.name = "scale_set/" + name;
      // (Data goes in as a spawn argument: CAF 0.17.6 dereferences a null argument tuple when an
      // actor is spawned with none, which UBSan flags.)
      b.subtree.start = [](caf::actor_system& s) {
        return s.spawn([](caf::event_based_actor*, int) -> caf::behavior { return {[](int) {}}; }, 0);
      };
      return b;
    };
    catalog = cap::spawn_object_catalog(sys, opts);
    sched.run();
  }

  // The ScaleSet kind as the scale sets' wiring gives it (Ready is the subtree's to write).
  static cap::catalog_options options() {
    cap::catalog_options o;
    o.kind = cap::catalog_kind{k8s::resource_kind{"headroom.dev", "v1alpha1", "scalesets", true},
                               "headroom.dev/v1alpha1",
                               "ScaleSet",
                               "scale_set_catalog",
                               "scale set",
                               "scale_set_objects",
                               [](int64_t g, const std::string& reason, const std::string& message, const std::string& now) {
                                 return cap::ready_condition_patch(g, false, reason, message, now);
                               },
                               nullptr};
    return o;
  }

  void event(const std::string& type, const std::string& json) {
    ASSERT_TRUE(io.stream("watch=true", R"({"type":")" + type + R"(","object":)" + json + "}\n"));
    sched.run();
  }

  std::vector<std::string> take() {
    auto out = *asked;
    asked->clear();
    return out;
  }

  std::shared_ptr<k8s::informer<k8s::unstructured>> objects;
  journal asked = std::make_shared<std::vector<std::string>>();
  journal handed = std::make_shared<std::vector<std::string>>();
  journal runs = std::make_shared<std::vector<std::string>>();  // what the HUD's registry was told
  std::vector<std::string> counted;
  std::shared_ptr<cap::catalog_memo> memo = std::make_shared<cap::catalog_memo>();
  bool ready = false;  // the catalog writes Ready once a subtree runs
  std::function<cap::catalog_claim(const k8s::unstructured&)> claim_of = [](const k8s::unstructured& o) {
    return cap::catalog_claim{o.meta.name, "metadata.name", "the scale set '" + o.meta.name + "'"};
  };
  runtime::supervisor_actor supervisor;
  cap::catalog_actor catalog;
};

using strings = std::vector<std::string>;

TEST_F(catalog_fixture, each_object_starts_its_subtree_a_new_generation_replaces_it_and_a_delete_stops_it) {
  start(object("team-a", "linux", 1));
  EXPECT_EQ(take(), strings{"add scale_set/linux"}) << "an object listed before the catalog started";
  event("MODIFIED", object("team-a", "linux", 1, R"({"maxRunners":3})"));
  EXPECT_EQ(take(), strings{}) << "the same generation (a status write, a label): nothing";
  event("ADDED", object("team-a", "gpu", 1));
  EXPECT_EQ(take(), strings{"add scale_set/gpu"});
  event("MODIFIED", object("team-a", "linux", 2, R"({"maxRunners":3})"));
  EXPECT_EQ(take(), (strings{"stop scale_set/linux", "add scale_set/linux"})) << "linux alone, replaced";
  EXPECT_EQ(*handed, strings{"linux kept"}) << "its session handed to the subtree that replaces it";
  event("DELETED", object("team-a", "linux", 2, R"({"maxRunners":3})"));
  EXPECT_EQ(take(), strings{"stop scale_set/linux"});
  EXPECT_EQ(handed->back(), "linux deleted") << "a deleted scale set's session is deleted";
  ASSERT_NE(find("DELETE", "/namespaces/team-a/configmaps/owner-linux"), nullptr) << "its owner (and so its placeholders) go";
  EXPECT_EQ(counted, (strings{"started", "started", "replaced", "stopped"}));
  EXPECT_EQ(*runs, (strings{"linux on", "gpu on", "linux off", "linux on", "linux off"})) << "its HUD demand follows what runs";
  // Made again under the same name: a new object, started afresh.
  event("ADDED", object("team-a", "linux", 1, "{}", "uid-second"));
  EXPECT_EQ(take(), strings{"add scale_set/linux"});
}

TEST_F(catalog_fixture, a_spec_that_cannot_run_is_refused_in_the_status_or_while_the_last_good_one_keeps_running) {
  start(object("team-a", "linux", 1, R"({"maxRunners":"bad"})") + "," + object("team-a", "taken", 1) + "," +
            R"({"apiVersion":"headroom.dev/v1alpha1","kind":"ScaleSet","metadata":{"name":"filed","namespace":"team-a","uid":"u",)"
            R"("generation":1,"resourceVersion":"7","labels":{"app.kubernetes.io/managed-by":"headroom"}},"spec":{}})",
        {"taken"});
  EXPECT_EQ(take(), strings{}) << "nothing started: one refused, one named like a file's scale set, one the file's own status object";
  ASSERT_EQ(waiting("PATCH", "/scalesets/"), 2u) << waiting_text();
  const auto* refused = find("PATCH", "/namespaces/team-a/scalesets/linux/status");
  ASSERT_NE(refused, nullptr);
  EXPECT_NE(refused->body.find(R"("type":"Ready","status":"False")"), std::string::npos) << refused->body;
  EXPECT_NE(refused->body.find(R"("reason":"SpecRefused","message":"spec.maxRunners: bad")"), std::string::npos) << refused->body;
  EXPECT_EQ(k8s::int_at(refused->body, {"status", "observedGeneration"}), 1);
  const auto* taken = find("PATCH", "/namespaces/team-a/scalesets/taken/status");
  ASSERT_NE(taken, nullptr);
  EXPECT_NE(taken->body.find("NameTaken"), std::string::npos) << taken->body;
  // Fixed: it starts. Then broken again: the running generation stays, and says so in an Event.
  event("MODIFIED", object("team-a", "linux", 2, R"({"maxRunners":4})"));
  EXPECT_EQ(take(), strings{"add scale_set/linux"});
  event("MODIFIED", object("team-a", "linux", 3, R"({"maxRunners":"bad"})"));
  EXPECT_EQ(take(), strings{}) << "generation 2 keeps running";
  EXPECT_EQ(waiting("PATCH", "/namespaces/team-a/scalesets/linux/status"), 1u) << "the running scale set's status is its own to write";
  EXPECT_EQ(std::count(counted.begin(), counted.end(), "refused"), 3);
}

TEST_F(catalog_fixture, a_namespace_asks_no_more_than_its_bounds_and_a_refused_spec_runs_once_there_is_room) {
  start(object("team-a", "linux", 1, R"({"maxRunners":6})") + "," + object("team-a", "gpu", 1, R"({"maxRunners":6})"), {},
        {{"spec.maxRunners", "scaleSetObjects.limits.maxRunners", 10}});
  EXPECT_EQ(take(), strings{"add scale_set/linux"});
  const auto* refused = find("PATCH", "/namespaces/team-a/scalesets/gpu/status");
  ASSERT_NE(refused, nullptr) << waiting_text();
  EXPECT_NE(refused->body.find("NamespaceLimit"), std::string::npos) << refused->body;
  EXPECT_NE(refused->body.find("spec.maxRunners: the ScaleSet objects of namespace team-a would ask for 12 together, over "
                               "scaleSetObjects.limits.maxRunners (10)"),
            std::string::npos)
      << refused->body;
  // linux asks less: gpu fits now, and starts.
  event("MODIFIED", object("team-a", "linux", 2, R"({"maxRunners":4})"));
  EXPECT_EQ(take(), (strings{"stop scale_set/linux", "add scale_set/linux", "add scale_set/gpu"}));
  // A change over the bound is refused while the smaller generation keeps running.
  event("MODIFIED", object("team-a", "gpu", 2, R"({"maxRunners":7})"));
  EXPECT_EQ(take(), strings{});
}

TEST_F(catalog_fixture, a_restarted_catalog_keeps_what_runs_and_stops_what_was_deleted_while_it_was_down) {
  start(object("team-a", "linux", 4) + "," + object("team-a", "gpu", 1));
  EXPECT_EQ(take(), (strings{"add scale_set/linux", "add scale_set/gpu"}));
  // The catalog crashes; gpu's object is deleted before its successor runs.
  caf::anon_send_exit(catalog, caf::exit_reason::kill);
  sched.run();
  event("DELETED", object("team-a", "gpu", 1));
  auto opts = std::make_shared<cap::catalog_options>(options());
  opts->objects = {objects};
  opts->parent = supervisor;
  opts->kube = &kube;
  opts->memo = memo;
  opts->build = [](caf::actor_system&, const std::string&) -> std::variant<cap::catalog_build, std::string> {
    return std::string{"not called"};
  };
  catalog = cap::spawn_object_catalog(sys, opts);
  sched.run();
  EXPECT_EQ(take(), strings{"stop scale_set/gpu"}) << "linux runs its generation already; gpu's object is gone";
  EXPECT_NE(find("DELETE", "/configmaps/owner-gpu"), nullptr);
}

TEST_F(catalog_fixture, a_kind_whose_status_the_catalog_writes_is_ready_once_it_runs_and_a_workload_is_served_once) {
  // What a ReactiveTarget is: its claim is the workload it scales, and Ready is the catalog's to say.
  claim_of = [](const k8s::unstructured& o) {
    const auto target = k8s::string_at(o.raw, {"spec", "target"});
    return cap::catalog_claim{o.meta.ns + "/" + target, "spec.target", "the workload " + o.meta.ns + "/" + target};
  };
  ready = true;
  start(object("team-a", "one", 1, R"({"target":"web"})") + "," + object("team-a", "two", 1, R"({"target":"web"})"), {"team-a/api"});
  EXPECT_EQ(take(), strings{"add scale_set/one"});
  const auto* refused = find("PATCH", "/namespaces/team-a/scalesets/two/status");
  ASSERT_NE(refused, nullptr) << waiting_text();
  EXPECT_NE(refused->body.find("spec.target: the workload team-a/web is declared by the ScaleSet team-a/one"), std::string::npos)
      << refused->body;
  const auto* ok = find("PATCH", "/namespaces/team-a/scalesets/one/status");
  ASSERT_NE(ok, nullptr) << waiting_text();
  EXPECT_NE(ok->body.find(R"("type":"Ready","status":"True","observedGeneration":1)"), std::string::npos) << ok->body;
  EXPECT_NE(ok->body.find(R"("reason":"Running")"), std::string::npos) << ok->body;
  // A third names what the file scales: refused. The first goes: the second gets the workload.
  event("ADDED", object("team-a", "three", 1, R"({"target":"api"})"));
  EXPECT_EQ(take(), strings{});
  const auto* filed = find("PATCH", "/namespaces/team-a/scalesets/three/status");
  ASSERT_NE(filed, nullptr) << waiting_text();
  EXPECT_NE(filed->body.find("spec.target: the workload team-a/api is served from headroom's configuration file"), std::string::npos)
      << filed->body;
  event("DELETED", object("team-a", "one", 1, R"({"target":"web"})"));
  EXPECT_EQ(take(), (strings{"stop scale_set/one", "add scale_set/two"})) << "the freed workload goes to the object refused for it";
  EXPECT_EQ(std::count(counted.begin(), counted.end(), "refused"), 2) << "the file's workload is not judged again";
}

}  // namespace
