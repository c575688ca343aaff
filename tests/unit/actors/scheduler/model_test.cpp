// The scheduler's pure decisions: demand matching (FIFO, per-key deficit, the per-entity cap,
// slots), free slots of a pool, the health classification; and the dashboards' parameters,
// escaping and Link header.

#include <gtest/gtest.h>

#include "actors/scheduler/dashboards.hpp"
#include "actors/scheduler/scheduler.hpp"

namespace {

using namespace headroom;
using namespace headroom::actors::scheduler;
using store::job;
using store::job_status;
using store::worker;
using store::worker_status;

job pending(int64_t id, std::string entity, std::string labels = "linux", int64_t at = 0) {
  job j;
  j.id = id;
  j.entity = std::move(entity);
  j.labels = std::move(labels);
  j.created_at = at ? at : id;
  return j;
}

worker live(std::string name, std::string entity, std::string labels = "linux", int64_t job_id = 0) {
  worker w;
  w.name = std::move(name);
  w.entity = std::move(entity);
  w.labels = std::move(labels);
  w.job_id = job_id;
  w.status = worker_status::running;
  return w;
}

std::vector<int64_t> ids(const match_result& r) {
  std::vector<int64_t> out;
  for (const auto& j : r.provision)
    out.push_back(j.id);
  return out;
}

TEST(match_demand, serves_the_deficit_of_each_key_oldest_first) {
  match_input in;
  in.active_jobs = {pending(1, "a"), pending(2, "a"), pending(3, "b", "gpu"), pending(4, "a")};
  in.active_workers = {live("w1", "a")};  // one runner of a/linux already: serves one of a's three
  EXPECT_EQ(ids(match_demand(in)), (std::vector<int64_t>{1, 2, 3}));
}

TEST(match_demand, a_running_job_is_demand_and_its_runner_supply) {
  match_input in;
  auto running = pending(1, "a");
  running.status = job_status::running;
  in.active_jobs = {running, pending(2, "a")};
  in.active_workers = {live("w1", "a", "linux", 1)};
  EXPECT_EQ(ids(match_demand(in)), (std::vector<int64_t>{2}));
}

// The job's runner ended (its pod Succeeded, the worker is over) before the job's completion
// arrived: the job is still running in the store, but it needs no runner, and the pending job of
// its key has its own (before: a second worker for job 2, which took no job).
TEST(match_demand, a_running_job_whose_runner_is_gone_is_not_demand) {
  match_input in;
  auto running = pending(1, "a");
  running.status = job_status::running;
  running.runner_name = "w1";  // over: not among the live workers
  in.active_jobs = {running, pending(2, "a")};
  in.active_workers = {live("w2", "a")};  // job 2's runner, not yet given a job
  EXPECT_TRUE(ids(match_demand(in)).empty());
  // Its runner still live: the job is its runner's, and job 2 is served by w2.
  in.active_workers = {live("w1", "a", "linux", 1), live("w2", "a")};
  EXPECT_TRUE(ids(match_demand(in)).empty());
  // A running job whose runner is not known yet still counts (its runner may be an unbound one).
  running.runner_name.clear();
  in.active_jobs = {running, pending(2, "a")};
  in.active_workers = {live("w2", "a")};
  EXPECT_EQ(ids(match_demand(in)), (std::vector<int64_t>{2}));
}

TEST(match_demand, a_runner_whose_job_is_over_is_not_supply_but_counts_against_the_cap) {
  match_input in;
  in.active_jobs = {pending(2, "a")};
  in.active_workers = {live("w1", "a", "linux", 1)};  // job 1 finished; its pod has not ended yet
  in.default_cap = 2;
  EXPECT_EQ(ids(match_demand(in)), (std::vector<int64_t>{2}));
  in.default_cap = 1;
  auto r = match_demand(in);
  EXPECT_TRUE(r.provision.empty());
  EXPECT_EQ(r.capped, 1);
}

TEST(match_demand, labels_are_part_of_the_key_a_failed_worker_is_not_supply) {
  match_input in;
  in.active_jobs = {pending(1, "a", "gpu")};
  auto failed = live("w0", "a", "gpu");
  failed.status = worker_status::failed;
  in.active_workers = {live("w1", "a", "linux"), failed};
  EXPECT_EQ(ids(match_demand(in)), (std::vector<int64_t>{1}));
}

TEST(match_demand, caps_per_entity_with_overrides) {
  match_input in;
  for (int i = 1; i <= 6; ++i)
    in.active_jobs.push_back(pending(i, i % 2 ? "small" : "big"));
  in.caps = {{"small", 1}};
  in.default_cap = 20;
  auto r = match_demand(in);
  EXPECT_EQ(ids(r), (std::vector<int64_t>{1, 2, 4, 6}));
  EXPECT_EQ(r.capped, 2);
  in.caps = {{"small", 0}};
  EXPECT_EQ(ids(match_demand(in)), (std::vector<int64_t>{2, 4, 6}));
}

TEST(match_demand, a_personal_accounts_repositories_share_its_cap) {
  EXPECT_EQ(account_of("solo/tool"), "solo");
  EXPECT_EQ(account_of("acme"), "acme");
  match_input in;
  in.active_jobs = {pending(1, "solo/a"), pending(2, "solo/b"), pending(3, "solo/c"), pending(4, "other/x")};
  in.active_workers = {live("w1", "solo/b", "gpu")};
  in.caps = {{"solo", 2}};
  auto r = match_demand(in);
  EXPECT_EQ(ids(r), (std::vector<int64_t>{1, 4})) << "solo has one runner (for solo/b) and a cap of 2 over all its repositories";
  EXPECT_EQ(r.capped, 2);
}

TEST(match_demand, stops_at_the_free_slots) {
  match_input in;
  in.active_jobs = {pending(1, "a"), pending(2, "b"), pending(3, "c")};
  in.free_slots = 2;
  auto r = match_demand(in);
  EXPECT_EQ(ids(r), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.no_capacity, 1);
  in.free_slots = 0;
  EXPECT_TRUE(match_demand(in).provision.empty());
  in.free_slots = -1;  // unchecked
  EXPECT_EQ(match_demand(in).provision.size(), 3u);
}

std::shared_ptr<const k8s::node> node(std::string name, int64_t slots, k8s::string_pairs labels, bool unreachable = false) {
  k8s::node n;
  n.meta.name = std::move(name);
  n.meta.labels = std::move(labels);
  n.allocatable.add("headroom.dev/runner", slots);
  if (unreachable)
    n.taints.push_back({"node.kubernetes.io/unreachable", "", "NoExecute"});
  return std::make_shared<const k8s::node>(std::move(n));
}

std::shared_ptr<const k8s::pod> runner_on(std::string node_name, std::string phase = "Running") {
  k8s::pod p;
  p.node_name = std::move(node_name);
  p.phase = std::move(phase);
  k8s::pod_spec s;
  s.requests.add("headroom.dev/runner", 1);
  p.spec = s;
  return std::make_shared<const k8s::pod>(std::move(p));
}

TEST(free_slots, counts_matching_reachable_nodes_minus_live_pods) {
  const k8s::string_pairs pool{{"pool", "ci"}};
  std::vector nodes{node("n1", 4, pool), node("n2", 4, pool), node("other", 8, {{"pool", "gpu"}}), node("gone", 4, pool, true)};
  std::vector pods{runner_on("n1"), runner_on("n1", "Succeeded"), runner_on(""), runner_on("other"), runner_on("n2", "Failed")};
  // 8 on n1+n2; minus the running one on n1 and the unbound pending one.
  EXPECT_EQ(free_slots(nodes, pods, pool, "headroom.dev/runner"), 6);
  EXPECT_EQ(free_slots(nodes, pods, {{"pool", "none"}}, "headroom.dev/runner"), 0);
}

TEST(free_slots, an_unbound_pod_of_another_pool_takes_no_slot_of_this_one) {
  const k8s::string_pairs nodes_of_a{{"pool", "a"}};
  std::vector nodes{node("n1", 4, nodes_of_a)};
  auto labelled = [](std::string pool) {
    k8s::pod p = *runner_on("");
    p.meta.labels = k8s::string_pairs{{"headroom.dev/pool", std::move(pool)}};
    return std::make_shared<const k8s::pod>(std::move(p));
  };
  std::vector pods{labelled("a"), labelled("b"), labelled("b")};
  EXPECT_EQ(free_slots(nodes, pods, nodes_of_a, "headroom.dev/runner", "a"), 3);
  EXPECT_EQ(free_slots(nodes, pods, nodes_of_a, "headroom.dev/runner"), 1) << "without a pool, every unbound pod counts";
}

std::vector<pool_options> two_pools() {
  pool_options linux, docker;
  linux.name = "linux";
  linux.labels = {"Linux", "x64"};
  docker.name = "docker";
  docker.labels = {"linux", "x64", "docker"};
  return {linux, docker};
}

TEST(pools, a_job_goes_to_the_narrowest_pool_that_has_every_label_it_asks_for) {
  const auto pools = two_pools();
  EXPECT_EQ(pool_for(pools, "linux,self-hosted"), std::optional<size_t>{0}) << "self-hosted is every pool's";
  EXPECT_EQ(pool_for(pools, "linux,x64"), std::optional<size_t>{0}) << "docker serves it too, with one label more";
  EXPECT_EQ(pool_for(pools, "docker,linux"), std::optional<size_t>{1});
  EXPECT_EQ(pool_for(pools, "gpu,linux"), std::nullopt);
  EXPECT_EQ(pool_for(pools, "ubuntu-latest"), std::nullopt);
  EXPECT_EQ(pool_for({pool_options{}}, "anything,self-hosted"), std::optional<size_t>{0})
      << "the default pool without labels serves every self-hosted job";
  EXPECT_EQ(pool_for({pool_options{}}, "ubuntu-latest"), std::nullopt);
}

TEST(pools, a_broader_pool_listed_first_does_not_take_a_plain_job) {
  // #61: {self-hosted,linux,x64,gpu} before {self-hosted,linux,x64} gave every plain job a GPU runner.
  pool_options gpu, plain, any;
  gpu.name = "gpu";
  gpu.labels = {"self-hosted", "linux", "x64", "gpu"};
  plain.name = "plain";
  plain.labels = {"self-hosted", "Linux", "X64"};
  EXPECT_EQ(pool_for({gpu, plain}, "self-hosted,linux,x64"), std::optional<size_t>{1});
  EXPECT_EQ(pool_for({gpu, plain}, "self-hosted,linux,x64,gpu"), std::optional<size_t>{0});
  EXPECT_EQ(pool_for({any, gpu, plain}, "linux,self-hosted,x64"), std::optional<size_t>{2})
      << "the pool without labels takes only what no labelled pool covers";
  EXPECT_EQ(pool_for({any, gpu, plain}, "self-hosted,arm64"), std::optional<size_t>{0});
  plain.labels = {"self-hosted", "linux", "x64", "big"};
  EXPECT_EQ(pool_for({gpu, plain}, "self-hosted,linux,x64"), std::optional<size_t>{0}) << "a tie goes to the pool listed first";
}

TEST(scopes, an_enterprises_runners_serve_its_organizations_not_personal_repositories) {
  EXPECT_EQ(runner_scope("", "acme"), "orgs/acme");
  EXPECT_EQ(runner_scope("", "solo/tool"), "repos/solo/tool");
  EXPECT_EQ(runner_scope("big", "acme"), "enterprises/big");
  EXPECT_EQ(runner_scope("big", "solo/tool"), "repos/solo/tool");
  EXPECT_EQ(group_owner("orgs/acme"), "acme");
  EXPECT_EQ(group_owner("enterprises/big"), "enterprises/big");
}

TEST(pools, a_runner_registers_with_its_pools_labels_and_self_hosted) {
  auto pools = two_pools();
  EXPECT_EQ(registered_labels(pools[0], "linux,self-hosted"), (std::vector<std::string>{"self-hosted", "Linux", "x64"}));
  pools[0].labels.push_back("Self-Hosted");
  EXPECT_EQ(registered_labels(pools[0], "linux"), (std::vector<std::string>{"Linux", "x64", "Self-Hosted"}));
  EXPECT_EQ(registered_labels(pool_options{}, "linux,self-hosted"), (std::vector<std::string>{"linux", "self-hosted"}))
      << "the default pool without labels registers each runner with its job's";
}

TEST(pools, jobs_and_workers_split_by_pool_and_the_unpooled_are_counted) {
  const auto pools = two_pools();
  auto split = split_by_pool(pools, {pending(1, "a", "linux"), pending(2, "a", "docker"), pending(3, "a", "gpu"), pending(4, "b", "docker,x64")},
                             {live("w1", "a", "docker"), live("w2", "a", "gpu")});
  ASSERT_EQ(split.jobs.size(), 2u);
  EXPECT_EQ(split.jobs[0].size(), 1u);
  EXPECT_EQ(split.jobs[1].size(), 2u);
  EXPECT_EQ(split.workers[1].size(), 1u);
  EXPECT_EQ(split.unpooled, 1) << "job 3 asks for gpu, which no pool has";
}

TEST(pools, the_account_cap_counts_every_pool_and_a_pool_may_add_its_own) {
  scheduler_options o;
  o.pools = two_pools();
  o.default_max_workers = 3;
  // acme has 2 runners in linux; linux gets 1 more, docker then none (3 across both pools).
  auto split = split_by_pool(o.pools, {pending(1, "acme", "linux"), pending(2, "acme", "linux"), pending(3, "acme", "linux"),
                                       pending(4, "acme", "docker"), pending(5, "acme", "docker")},
                             {live("w1", "acme", "linux"), live("w2", "acme", "linux")});
  auto none = [](const pool_options&) { return int64_t{-1}; };
  auto plans = match_pools(o, split, none);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(ids(plans[0]), (std::vector<int64_t>{1}));
  EXPECT_TRUE(plans[1].provision.empty()) << "linux's new runner counts against docker's jobs in the same cycle";
  EXPECT_EQ(plans[1].capped, 2);
  // A pool's own per-account cap, under the scheduler's.
  o.default_max_workers = 20;
  o.pools[1].default_max_workers = 1;
  plans = match_pools(o, split, none);
  EXPECT_EQ(ids(plans[1]), (std::vector<int64_t>{4}));
  EXPECT_EQ(plans[1].capped, 1);
  // Free slots per pool.
  plans = match_pools(o, split, [](const pool_options& p) { return p.name == "linux" ? int64_t{0} : int64_t{-1}; });
  EXPECT_TRUE(plans[0].provision.empty());
  EXPECT_GT(plans[0].no_capacity, 0);
}

TEST(match_demand, a_pools_max_workers_caps_every_entity_together) {
  match_input in;
  in.active_jobs = {pending(1, "a"), pending(2, "b"), pending(3, "c"), pending(4, "a")};
  in.active_workers = {live("w1", "z", "gpu")};  // a live runner of the pool, busy elsewhere
  in.pool_cap = 3;
  auto r = match_demand(in);
  EXPECT_EQ(ids(r), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.pool_full, 2);
  in.pool_cap = -1;
  EXPECT_EQ(match_demand(in).provision.size(), 4u);
}

std::multimap<std::string, std::string> q(std::initializer_list<std::pair<const std::string, std::string>> kv) { return {kv}; }

TEST(dashboards, page_parameters_and_their_errors_name_the_parameter) {
  const int64_t now = 1'800'000'000'000;  // ms
  auto ok = parse_page_params(q({{"page", "3"}, {"per_page", "25"}, {"start", "2026-11-01"}, {"end", "2026-11-02"}}), now, true);
  ASSERT_TRUE(std::holds_alternative<page_params>(ok)) << std::get<std::string>(ok);
  const auto& p = std::get<page_params>(ok);
  EXPECT_EQ(p.page, 3u);
  EXPECT_EQ(p.per_page, 25u);
  EXPECT_EQ(p.query.limit, 25u);
  EXPECT_EQ(p.query.since, 1'793'491'200'000);             // 2026-11-01T00:00:00Z
  EXPECT_EQ(p.query.until, 1'793'491'200'000 + 2 * 86'400'000);  // through the end of 2026-11-02
  auto rel = std::get<page_params>(parse_page_params(q({{"start", "-7d"}}), now, true));
  EXPECT_EQ(rel.query.since, now - 7 * 86'400'000LL);
  auto cursor = std::get<page_params>(parse_page_params(q({{"after", "1793491200123:completed:42"}}), now, true));
  EXPECT_EQ(cursor.query.after_created_at, 1'793'491'200'123);
  EXPECT_EQ(cursor.query.after_status, headroom::store::job_status::completed);
  EXPECT_EQ(cursor.query.after_id, 42);
  auto named = std::get<page_params>(parse_page_params(q({{"after", "5:headroom-runner-abc"}}), now, false));
  EXPECT_EQ(named.query.after_name, "headroom-runner-abc");

  for (auto [k, v, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"per_page", "0", "per_page"}, {"per_page", "1001", "per_page"}, {"per_page", "x", "per_page"},
           {"page", "-1", "page"},        {"start", "2026-02-31", "start"}, {"end", "yesterday", "end"},
           {"after", "12", "after"},      {"after", "a:1", "after"},        {"color", "red", "color"},
           {"after", "5:42", "status"},   {"after", "5:done:42", "status"}, {"after", "5:running:x", "job id"},
           {"page", "1001", "page"}}) {  // #40: a client's error (400), once reported as the store's (503)
    auto r = parse_page_params(q({{k, v}}), now, true);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << k << "=" << v;
    EXPECT_NE(std::get<std::string>(r).find(says), std::string::npos) << std::get<std::string>(r);
  }
  auto inverted = parse_page_params(q({{"start", "2026-11-05"}, {"end", "2026-11-01"}}), now, true);
  ASSERT_TRUE(std::holds_alternative<std::string>(inverted));
}

TEST(dashboards, link_header_carries_the_cursor_and_the_range) {
  page_params p;
  p.page = 2;
  p.per_page = 50;
  p.start = "-7d";
  const auto link = link_header("/jobs.json", p, true, 1793491200123, "running:42");
  EXPECT_EQ(link, "</jobs.json?per_page=50&start=-7d&page=1>; rel=\"first\", "
                  "</jobs.json?per_page=50&start=-7d&page=3&after=1793491200123%3Arunning%3A42>; rel=\"next\"");
  EXPECT_EQ(link_header("/jobs.json", p, false, 0, ""), "</jobs.json?per_page=50&start=-7d&page=1>; rel=\"first\"");
}

TEST(dashboards, webhook_strings_are_escaped_in_html_and_json) {
  job j = pending(7, "acme\"><img src=x onerror=alert(1)>", "linux,<b>");
  j.name = "<script>alert('x')</script>";
  page_params p;
  const auto html = jobs_html({j}, p, "");
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  const auto json = jobs_json({j});
  EXPECT_NE(json.find("\\\"><img"), std::string::npos) << json;
}

TEST(dashboards, usage_groups_by_entity_and_labels) {
  auto running = pending(2, "a");
  running.status = job_status::running;
  worker creating = live("w2", "a");
  creating.status = worker_status::creating;
  auto rows = usage({pending(1, "a"), running, pending(3, "b", "gpu")}, {live("w1", "a"), creating}, {{"b", 3}}, 20);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].entity, "a");
  EXPECT_EQ(rows[0].pending, 1);
  EXPECT_EQ(rows[0].running, 1);
  EXPECT_EQ(rows[0].workers_running, 1);
  EXPECT_EQ(rows[0].workers_creating, 1);
  EXPECT_EQ(rows[0].cap, 20);
  EXPECT_EQ(rows[1].cap, 3);
}

// #61: deliveries refused during a store outage are redelivered after it: per event (guid), only
// when none of its attempts was answered OK, its newest attempt, oldest event first, bounded.
TEST(redelivery, each_failed_event_is_redelivered_once_by_its_newest_attempt_oldest_first) {
  auto d = [](int64_t id, const char* guid, int64_t at, const char* status, const char* event = "workflow_job") {
    github::hook_delivery x;
    x.id = id;
    x.guid = guid;
    x.delivered_at_ms = at;
    x.status = status;
    x.event = event;
    return x;
  };
  const std::vector<github::hook_delivery> listed = {  // newest first, as GitHub lists them
      d(9, "g-late", 900, "Invalid HTTP Response: 503"),
      d(8, "g-a", 800, "Invalid HTTP Response: 503"),  // a later attempt of g-a, also refused
      d(7, "g-ok", 700, "OK"),                          // redelivered by hand, and taken
      d(6, "g-ping", 600, "Invalid HTTP Response: 503", "ping"),
      d(5, "g-ok", 500, "Invalid HTTP Response: 503"),
      d(4, "g-b", 400, "failed to connect to host"),
      d(3, "g-a", 300, "Invalid HTTP Response: 503"),
      d(2, "g-fine", 200, "OK"),
  };
  EXPECT_EQ(deliveries_to_redeliver(listed, 100), (std::vector<int64_t>{8, 4, 9}))
      << "g-a (first refused at 300) by its newest attempt 8, then g-b, then g-late; g-ok and g-fine are done, ping is not a job";
  EXPECT_EQ(deliveries_to_redeliver(listed, 2), (std::vector<int64_t>{8, 4})) << "bounded";
  EXPECT_TRUE(deliveries_to_redeliver({}, 10).empty());
}

}  // namespace
