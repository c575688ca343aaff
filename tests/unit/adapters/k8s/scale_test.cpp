// The /scale subresource and kind discovery (adapters/k8s/scale.cpp), on bodies as the API server
// writes them.
#include <gtest/gtest.h>

#include "adapters/k8s/scale.hpp"

namespace headroom::k8s {
namespace {

TEST(k8s_scale, decodes_a_scale_and_names_what_is_wrong) {
  auto s = decode_scale(R"json({"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"web","namespace":"ml",
    "uid":"u1","resourceVersion":"4711","creationTimestamp":"2026-11-23T10:00:00Z"},"spec":{"replicas":3},
    "status":{"replicas":2,"selector":"app=web,tier in (a,b)"}})json");
  ASSERT_TRUE(std::holds_alternative<scale>(s)) << std::get<decode_error>(s).message;
  const auto& v = std::get<scale>(s);
  EXPECT_EQ(v.resource_version, "4711");
  EXPECT_EQ(v.spec_replicas, 3);
  EXPECT_EQ(v.status_replicas, 2);
  EXPECT_EQ(v.selector, "app=web,tier in (a,b)");
  // A scale with no replicas yet (spec: {}) is 0.
  auto empty = decode_scale(R"({"metadata":{"resourceVersion":"1"},"spec":{},"status":{"replicas":0}})");
  ASSERT_TRUE(std::holds_alternative<scale>(empty));
  EXPECT_EQ(std::get<scale>(empty).spec_replicas, 0);
  auto bad = decode_scale(R"({"metadata":{},"spec":{"replicas":-2}})");
  ASSERT_TRUE(std::holds_alternative<decode_error>(bad));
  EXPECT_NE(std::get<decode_error>(bad).message.find("spec.replicas"), std::string::npos);
  auto worse = decode_scale(R"({"spec":{"replicas":"three"}})");
  ASSERT_TRUE(std::holds_alternative<decode_error>(worse));
  EXPECT_NE(std::get<decode_error>(worse).message.find("spec"), std::string::npos);
}

TEST(k8s_scale, encodes_the_write_with_its_precondition) {
  EXPECT_EQ(encode_scale("ml", "web", "4711", 4),
            R"({"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"ml","resourceVersion":"4711"},"spec":{"replicas":4}})");
  EXPECT_EQ(encode_scale("ml", "we\"b", "", 0),
            R"({"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"we\"b","namespace":"ml"},"spec":{"replicas":0}})");
}

TEST(k8s_scale, discovery_finds_the_plural_scope_and_scale_subresource) {
  const char* apps = R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[
    {"name":"controllerrevisions","singularName":"","namespaced":true,"kind":"ControllerRevision","verbs":["get"]},
    {"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]},
    {"name":"deployments","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get"],"shortNames":["deploy"]},
    {"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment","verbs":["get"]}]})";
  std::string error;
  auto d = find_resource(apps, "apps/v1", "Deployment", error);
  ASSERT_TRUE(d) << error;
  EXPECT_EQ(d->kind.group, "apps");
  EXPECT_EQ(d->kind.version, "v1");
  EXPECT_EQ(d->kind.plural, "deployments");
  EXPECT_TRUE(d->kind.namespaced);
  EXPECT_TRUE(d->has_scale);
  auto c = find_resource(apps, "apps/v1", "ControllerRevision", error);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->has_scale);
  EXPECT_FALSE(find_resource(apps, "apps/v1", "CronJob", error));
  EXPECT_NE(error.find("serves no kind CronJob"), std::string::npos);
  auto core = find_resource(R"({"resources":[{"name":"replicationcontrollers","namespaced":true,"kind":"ReplicationController"},
    {"name":"replicationcontrollers/scale","namespaced":true,"kind":"Scale"}]})", "v1", "ReplicationController", error);
  ASSERT_TRUE(core);
  EXPECT_EQ(core->kind.group, "");
  EXPECT_EQ(core->kind.path("ns", "rc", "scale"), "/api/v1/namespaces/ns/replicationcontrollers/rc/scale");
  EXPECT_FALSE(find_resource("{", "v1", "Pod", error));
  EXPECT_FALSE(error.empty());
}

TEST(k8s_scale, replicas_pointer_of_builtins_and_from_a_crd) {
  EXPECT_EQ(builtin_replicas_pointer({"apps", "v1", "deployments", true}), "/spec/replicas");
  EXPECT_EQ(builtin_replicas_pointer({"", "v1", "replicationcontrollers", true}), "/spec/replicas");
  EXPECT_FALSE(builtin_replicas_pointer({"example.com", "v1", "widgets", true}));
  EXPECT_EQ(crd_name({"example.com", "v1", "widgets", true}), "widgets.example.com");
  EXPECT_EQ(json_pointer_escape("headroom.dev/reactive-scale"), "headroom.dev~1reactive-scale");
  EXPECT_EQ(json_pointer_escape("a~b/c"), "a~0b~1c");

  auto crd = [](std::string_view path) {
    return std::string{R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","spec":{"group":"example.com",)"
                       R"("versions":[{"name":"v1beta1","served":true,"subresources":{"scale":{"specReplicasPath":".spec.old"}}},)"
                       R"({"name":"v1","served":true,"subresources":{"status":{},"scale":{"specReplicasPath":")"} +
           std::string{path} + R"(","statusReplicasPath":".status.replicas"}}}]}})";
  };
  std::string error;
  EXPECT_EQ(crd_replicas_pointer(crd(".spec.replicas"), "v1", error), "/spec/replicas") << error;
  EXPECT_EQ(crd_replicas_pointer(crd(".spec.old"), "v1beta1", error), "/spec/old") << error;
  EXPECT_EQ(crd_replicas_pointer(crd(".spec.pool.size~x/y"), "v1", error), "/spec/pool/size~0x~1y") << error;
  for (std::string_view bad : {".spec.items[0].n", "spec.replicas", ".status.replicas", ".spec..n", ".spec.", ""}) {
    error.clear();
    EXPECT_FALSE(crd_replicas_pointer(crd(bad), "v1", error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  error.clear();
  EXPECT_FALSE(crd_replicas_pointer(crd(".spec.replicas"), "v2", error));
  EXPECT_NE(error.find("no version v2"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(crd_replicas_pointer(R"({"spec":{"versions":[{"name":"v1"}]}})", "v1", error));
  EXPECT_NE(error.find("specReplicasPath"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(crd_replicas_pointer(R"({"spec":{"versions":)", "v1", error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace headroom::k8s
