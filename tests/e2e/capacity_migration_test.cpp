// An ARC user's switch, end to end (docs/migrating-from-arc.md): the values of an ARC
// gha-runner-scale-set release and its Secret, unchanged, translated by scripts/migrate-from-arc,
// installed with `helm install`, and the burst run through what that install made.
//
// The ARC release is what a GitHub Enterprise Server user has: the server behind TLS from a private
// CA (githubServerTLS from a ConfigMap), reached only through an HTTP proxy (a real one, Debian's
// tinyproxy), a GitHub App Secret with ARC's key names, and two releases: containerMode kubernetes
// with its work volume claim, and containerMode dind. The installed Deployment's pod runs on the
// cluster's real node (#56: kubelet, containerd, runc; tests/testenv/node) from headroom's image,
// pulled by digest, with the chart's mounts, env, projected token and security context, in a
// namespace enforcing Pod Security "restricted"; the GitHub server and the proxy listen on this
// machine's node-network address, where pods reach it. The runners stay on Karpenter's kwok nodes.

#include <gtest/gtest.h>

#include <fstream>

#include "e2e/capacity_suite.hpp"
#include "testenv/child_process.hpp"

namespace headroom::e2e {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The chart's release, removed with its namespace when the test ends.
struct release_guard {
  cluster* c;
  std::string helm, name, ns;
  ~release_guard() {
    testenv::run_command({helm, "uninstall", name, "-n", ns, "--kubeconfig", c->kubeconfig(), "--wait", "--timeout", "60s"});
    c->kubectl({"delete", "namespace", ns, "--timeout=90s"});
  }
};

TEST(capacity_e2e, an_arc_install_translated_by_the_migration_tool_runs_the_burst) {
  REQUIRE_ENV(e);
  scenario sc{"arc-migrated", 4, 1, "5m", "3s"};
  sc.chart_install = true;
  world w{e, sc};
  REQUIRE_WORLD(w);
  scenario dind_sc{"arc-migrated-dind", 4, 1, "5m", "3s"};
  dind_sc.chart_install = true;
  world dind{e, dind_sc};  // the second release's namespace and its runners
  REQUIRE_WORLD(dind);
  const std::string src = HEADROOM_SOURCE_DIR, hr_ns = "headroom-migrated";
  auto helm = testenv::run_command({src + "/tests/testenv/build-helm.sh"});
  ASSERT_EQ(helm.exit_code, 0) << helm.err;
  while (!helm.out.empty() && helm.out.back() == '\n')
    helm.out.pop_back();
  ASSERT_EQ(e.c->kubectl({"create", "namespace", hr_ns}).exit_code, 0);
  release_guard guard{e.c, helm.out, "migrated", hr_ns};

  // headroom's image as a user builds it, pushed to the real node's registry.
  const auto pushed = testenv::run_command({src + "/tests/testenv/node", "push-headroom", e.c->dir(), w.dir + "/image"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string image = pushed.out.substr(0, pushed.out.find('\n'));
  ASSERT_NE(image.find("/headroom@sha256:"), std::string::npos) << pushed.out;
  const std::string host_ip = e.c->node_host_ip();  // where the node's pods reach this machine
  ASSERT_FALSE(host_ip.empty()) << "the cluster has no real node";

  // A real HTTP proxy: the only way to the GitHub server.
  const int proxy_port = testenv::free_port();
  std::ofstream(w.dir + "/tinyproxy.conf") << "Port " << proxy_port << "\nListen " << host_ip << "\nTimeout 600\nLogLevel Connect\n"
                                           << "MaxClients 200\n";  // no ConnectPort line: CONNECT to any port
  testenv::child_process proxy({"/usr/bin/tinyproxy", "-d", "-c", w.dir + "/tinyproxy.conf"}, {}, w.dir + "/tinyproxy.log");
  const std::string proxy_url = "http://" + host_ip + ":" + std::to_string(proxy_port);
  ASSERT_TRUE(eventually([&] { return testenv::run_command({"curl", "-s", "-o", "/dev/null", proxy_url}).exit_code == 0; }, 10s))
      << proxy.log();
  const auto probed = read_file(w.dir + "/tinyproxy.log").size();  // the log from here on is headroom's traffic

  // What the ARC user has: the Secret with ARC's keys (a GitHub App), the server's CA in a ConfigMap,
  // and their release's values. The API server is the `kubernetes` Service, which the translated
  // NO_PROXY must keep off the proxy.
  std::ofstream(w.dir + "/app.pem") << e.app_private_key;
  std::ofstream(w.dir + "/ca.crt") << e.peer->ca_pem();
  ASSERT_EQ(e.c->kubectl({"-n", hr_ns, "create", "secret", "generic", "arc-github-app", "--from-literal=github_app_id=12345",
                          "--from-literal=github_app_installation_id=42", "--from-file=github_app_private_key=" + w.dir + "/app.pem"})
                .exit_code,
            0);
  ASSERT_EQ(e.c->kubectl({"-n", hr_ns, "create", "configmap", "ghes-ca", "--from-file=ca.crt=" + w.dir + "/ca.crt"}).exit_code, 0);
  const std::string ghes = e.peer->https_url();  // on host_ip, which its certificate names
  auto arc_values = [&](const std::string& name, const std::string& mode) {
    return "githubConfigUrl: " + ghes + "/headroom-org\n" + "githubConfigSecret: arc-github-app\n" +
           "githubServerTLS:\n  certificateFrom:\n    configMapKeyRef: {name: ghes-ca, key: ca.crt}\n" +
           "proxy:\n  https: {url: \"" + proxy_url + "\"}\n  noProxy: [kubernetes.default.svc]\n" +
           "minRunners: 1\nmaxRunners: 4\nrunnerScaleSetName: " + name + "\n" +
           "template:\n  spec:\n    containers:\n      - name: runner\n        image: runner:e2e\n" +
           "        command: [/home/runner/run.sh]\n        resources: {requests: {cpu: 500m, memory: 512Mi}}\n" + mode +
           "listenerTemplate:\n  spec:\n    containers: [{name: listener}]\n";
  };
  std::ofstream(w.dir + "/arc-values.yaml")
      << arc_values("arc-migrated", "containerMode:\n  type: kubernetes\n  kubernetesModeWorkVolumeClaim:\n    accessModes: [\"ReadWriteOnce\"]\n"
                                    "    storageClassName: e2e-work\n    resources: {requests: {storage: 1Gi}}\n");
  std::ofstream(w.dir + "/arc-dind-values.yaml") << arc_values("arc-migrated-dind", "containerMode:\n  type: dind\n");

  // Translated, then installed as it comes out, with only what this cluster needs on top: the pod
  // on the real node (it tolerates its taint) from the image just pushed, and the ScaleSet CRD the
  // suite's other scenarios share (applied as the chart would; a second release must not own it).
  auto migrated = testenv::run_command({src + "/scripts/migrate-from-arc", "arc-migrated/arc-migrated=" + w.dir + "/arc-values.yaml",
                                        "arc-migrated-dind/arc-migrated-dind=" + w.dir + "/arc-dind-values.yaml"});
  ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
  EXPECT_NE(migrated.err.find("listenerTemplate: not carried over"), std::string::npos) << migrated.err;
  // What the tool's note asks of the user: the workflow pods' size (the simulator's), added to the
  // translated file by hand as a user would.
  auto values = migrated.out;
  const std::string pool = "    capacityAware:\n      proactiveCapacity: 1\n";
  EXPECT_NE(migrated.err.find("set capacityAware.workflowResources"), std::string::npos) << migrated.err;
  int scale_sets = 0;
  for (auto at = values.find(pool); at != std::string::npos; at = values.find(pool, at + pool.size()), ++scale_sets)
    values.insert(at + pool.size(), "      workflowResources: {cpu: 500m, memory: 512Mi}\n");
  ASSERT_EQ(scale_sets, 2) << values;
  std::ofstream(w.dir + "/headroom-values.yaml") << values;
  std::ofstream(w.dir + "/test-values.yaml")
      << "replicaCount: 1\nnodeSelector: {headroom.dev/testenv-node: real}\n"
      << "tolerations: [{key: headroom.dev/testenv-node, operator: Exists, effect: NoSchedule}]\n"
      << "image: {repository: " << image.substr(0, image.find('@')) << ", digest: \"" << image.substr(image.find('@') + 1) << "\"}\n"
      << "crds: {scaleSets: false}\n";
  ASSERT_EQ(e.c->kubectl({"label", "namespace", hr_ns, "pod-security.kubernetes.io/enforce=restricted"}).exit_code, 0);
  ASSERT_EQ(e.c->kubectl({"apply", "--server-side", "--force-conflicts", "-f", src + "/deploy/crds/scalesets.yaml"}).exit_code, 0);
  auto installed = testenv::run_command({helm.out, "install", "migrated", src + "/deploy/chart/headroom", "-n", hr_ns, "--kubeconfig",
                                         e.c->kubeconfig(), "-f", w.dir + "/headroom-values.yaml", "-f", w.dir + "/test-values.yaml"});
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;

  // Its pod followed as a child process: its log streamed, SIGTERM scales the Deployment to 0.
  const std::string kubectl = std::string{std::getenv("HEADROOM_TESTENV_DIR")} + "/bin/kubectl";
  w.headroom = std::make_unique<agent>(
      w.dir, agent::command_line{{"/bin/bash", src + "/tests/testenv/follow-pod.sh", kubectl, e.c->kubeconfig(), hr_ns,
                                  "app.kubernetes.io/instance=migrated"},
                                 {"PATH=/usr/bin:/bin"}});

  // The burst, as in capacity_warm_pool_and_burst, on both scale sets at once.
  int64_t set = 0, dind_set = 0;
  ASSERT_TRUE(eventually([&] { return (set = w.scale_set_id()) != 0 && (dind_set = dind.scale_set_id()) != 0; }, 90s))
      << w.headroom->log();
  ASSERT_TRUE(eventually([&] { return w.latest_capacity(set) == 1 && w.latest_capacity(dind_set) == 1; }, 120s))
      << "minRunners 1: one warm pair each\n" << w.headroom->log();
  w.post_jobs(5);
  dind.post_jobs(5);
  ASSERT_TRUE(eventually([&] { return w.job_states()["completed"] == 5 && dind.job_states()["completed"] == 5; }, 240s))
      << w.headroom->log() << "\n" << w.sim->log() << "\n" << dind.sim->log() << "\n" << w.stuck_report() << dind.stuck_report();
  EXPECT_GT(audited(w, set), 2);
  EXPECT_GT(audited(dind, dind_set), 2);
  // ARC's dind mode, translated: every job's containers through its runner pod's dind sidecar.
  const auto dind_done = dind.outcomes();
  EXPECT_EQ(dind_done.dind, 5) << dind_done.errors << dind.sim->log();
  EXPECT_EQ(dind_done.errors, "");
  // #54: ARC's kubernetes mode, translated: every job's workflow pod was made by the runner's k8s
  // hook with the runner pod's token (the chart's runner ServiceAccount and Role, jobs included),
  // from headroom's hook template, on the runner's node with its work claim. (kubernetes-novolume,
  // the default, is what the other scenarios run; chart_test translates it.)
  const auto done = w.outcomes();
  EXPECT_EQ(done.hook, 5) << done.errors << w.sim->log();
  EXPECT_EQ(done.errors, "");
  EXPECT_EQ(done.workflow_elsewhere, 0);
  std::cout << "[lost] " << done.lost << " of 5 runner pods went while their job ran (a real runner's job fails)\n" << done.lost_why;
  EXPECT_EQ(done.lost, 0) << "no workflow pod preempts a runner: " << done.lost_why;
  EXPECT_TRUE(eventually([&] {
    return e.c->kubectl({"-n", "arc-migrated", "get", "scaleset", "arc-migrated", "-o", "jsonpath={.status.session}"}).out == "Open";
  }, 30s)) << "the chart's ScaleSet status";

  // The App from ARC's keys signed in; every GitHub call went through the proxy, and none to the
  // API server did.
  simdjson::dom::parser p;
  int64_t app_tokens = 0;
  EXPECT_EQ(p.parse(e.peer->control("/state").body)["requests"]["access_token"].get(app_tokens), simdjson::SUCCESS);
  EXPECT_GT(app_tokens, 0) << "installation tokens for the App from ARC's Secret";
  const auto proxied = read_file(w.dir + "/tinyproxy.log").substr(probed);
  const auto peer_host_port = ghes.substr(ghes.find("//") + 2);
  EXPECT_NE(proxied.find("CONNECT " + peer_host_port), std::string::npos) << proxied.substr(0, 3000);
  // Nothing else went through it: the API server (the `kubernetes` Service) was reached directly.
  std::istringstream lines{proxied};
  for (std::string line; std::getline(lines, line);) {  // tinyproxy: "CONNECT <time> [pid]: Request (file descriptor N): <request line>"
    if (line.find("Request (") != std::string::npos) {
      EXPECT_NE(line.find("CONNECT " + peer_host_port), std::string::npos) << "not GitHub's traffic through the proxy: " << line;
    }
  }
  const auto log = w.headroom->full_log();
  EXPECT_EQ(log.find("BEGIN RSA PRIVATE KEY"), std::string::npos) << "the App's key reached the log";
  const int stopped = w.headroom->stop();  // the Deployment scaled to 0: the kubelet's SIGTERM
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0) << "the container's exit: " << stopped << "\n" << w.headroom->log();
  // The chart's Role lets it hand the Lease back at SIGTERM (a standby takes over at its next retry).
  EXPECT_NE(w.headroom->full_log().find("lease released"), std::string::npos) << w.headroom->log();
}

}  // namespace
}  // namespace headroom::e2e
