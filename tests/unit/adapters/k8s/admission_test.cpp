#include "adapters/k8s/admission.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

using namespace headroom::k8s::admission;

namespace {

std::string review(const std::string& operation, const std::string& object, const std::string& kind = "Pod",
                   const std::string& extra = "") {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",)"
         R"("kind":{"group":"","version":"v1","kind":")" + kind + R"("},"resource":{"group":"","version":"v1","resource":"pods"},)"
         R"("namespace":"ci","operation":")" + operation + "\"" + extra + R"(,"object":)" + object + "}}";
}

std::string pod(const std::string& annotations, const std::string& gates) {
  std::string spec = R"({"containers":[{"name":"c","image":"busybox"}])";
  if (!gates.empty())
    spec += ",\"schedulingGates\":" + gates;
  spec += "}";
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"job-",)" +
         (annotations.empty() ? std::string{} : "\"annotations\":" + annotations + ",") + R"("labels":{"headroom.dev/queue":"ci"}},"spec":)" +
         spec + "}";
}

const std::string opted = R"({"headroom.dev/queue-allocation-gate":"true"})";

review_request decoded(const std::string& body) {
  auto r = decode_review(body);
  if (auto* e = std::get_if<review_error>(&r))
    ADD_FAILURE() << e->message;
  return std::get<review_request>(r);
}

std::string unbase64(const std::string& s) {
  std::string out(s.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                          static_cast<int>(s.size()));
  while (!s.empty() && s.back() == '=' && n > 0) {
    --n;
    const_cast<std::string&>(s).pop_back();
  }
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

}  // namespace

TEST(admission, an_opted_in_pod_create_gets_the_gate) {
  auto r = decoded(review("CREATE", pod(opted, "")));
  EXPECT_EQ(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_TRUE(r.opted_in);
  EXPECT_FALSE(r.gates_present);
  auto m = decide(r);
  EXPECT_EQ(m.what, outcome::gated);
  EXPECT_EQ(m.patch, R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"headroom.dev/queue-allocation-gate"}]}])");
}

TEST(admission, the_gate_is_appended_after_gates_set_by_others_and_never_twice) {
  auto m = decide(decoded(review("CREATE", pod(opted, R"([{"name":"example.com/other"}])"))));
  EXPECT_EQ(m.what, outcome::gated);
  EXPECT_EQ(m.patch, R"([{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"headroom.dev/queue-allocation-gate"}}])");
  auto again = decide(decoded(review("CREATE", pod(opted, R"([{"name":"example.com/other"},{"name":"headroom.dev/queue-allocation-gate"}])"))));
  EXPECT_EQ(again.what, outcome::already_gated);
  EXPECT_EQ(again.patch, "");
  // An empty list is present: append works on it too.
  EXPECT_EQ(decide(decoded(review("CREATE", pod(opted, "[]")))).patch.find("/spec/schedulingGates/-") != std::string::npos, true);
}

TEST(admission, only_opted_in_pod_creates_are_mutated) {
  EXPECT_EQ(decide(decoded(review("CREATE", pod("", "")))).what, outcome::not_opted_in);
  EXPECT_EQ(decide(decoded(review("CREATE", pod(R"({"headroom.dev/queue-allocation-gate":"false"})", "")))).what,
            outcome::not_opted_in);
  EXPECT_EQ(decide(decoded(review("CREATE", pod(R"({"headroom.dev/queue-allocation-gate":"True"})", "")))).what,
            outcome::not_opted_in);
  EXPECT_EQ(decide(decoded(review("UPDATE", pod(opted, "")))).what, outcome::not_pod_create);
  // Opted in without a queue: never gated (nothing would ungate it), and the client is told.
  std::string no_queue = pod(opted, "");
  no_queue.replace(no_queue.find(R"("labels":{"headroom.dev/queue":"ci"})"), 36, R"("labels":{"app":"x"})");
  const auto m = decide(decoded(review("CREATE", no_queue)));
  EXPECT_EQ(m.what, outcome::no_queue);
  EXPECT_EQ(m.patch, "");
  EXPECT_NE(m.warning.find("names no queue"), std::string::npos);
  EXPECT_EQ(decide(decoded(review("CREATE", pod(opted, ""), "Pod", R"(,"subResource":"binding")"))).what, outcome::not_pod_create);
  EXPECT_EQ(decide(decoded(review("CREATE", R"({"metadata":{"annotations":{"headroom.dev/queue-allocation-gate":"true"}}})", "ConfigMap"))).what,
            outcome::not_pod_create);
  EXPECT_EQ(decide(decoded(review("DELETE", "null"))).what, outcome::not_pod_create);
}

TEST(admission, malformed_reviews_name_the_field) {
  auto msg = [](const std::string& body) {
    auto r = decode_review(body);
    auto* e = std::get_if<review_error>(&r);
    return e ? e->message : std::string{"(decoded)"};
  };
  EXPECT_EQ(msg("{not json").rfind("body: not JSON", 0), 0u) << msg("{not json");
  EXPECT_EQ(msg("[1]"), "body: expected an AdmissionReview object, found an array");
  EXPECT_EQ(msg(R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"})"),
            "apiVersion: expected admission.k8s.io/v1, found 'admission.k8s.io/v1beta1'");
  EXPECT_EQ(msg(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})"), "request: required");
  EXPECT_EQ(msg(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}})"),
            "request.uid: expected a string, found a number");
  EXPECT_EQ(msg(review("CREATE", pod(opted, R"([{"name":"a"},{"name":3}])"))),
            "request.object.spec.schedulingGates[1].name: expected a string, found a number");
  EXPECT_EQ(msg(review("CREATE", pod(R"({"headroom.dev/queue-allocation-gate":true})", ""))),
            "request.object.metadata.annotations[headroom.dev/queue-allocation-gate]: expected a string, found a boolean");
  // The uid is kept when it was read, so the answer still names the request.
  auto r = decode_review(review("CREATE", pod(opted, R"({"name":"x"})")));
  ASSERT_TRUE(std::holds_alternative<review_error>(r));
  EXPECT_EQ(std::get<review_error>(r).uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(std::get<review_error>(r).message, "request.object.spec.schedulingGates: expected an array, found an object");
}

TEST(admission, the_answer_allows_and_carries_the_patch_in_base64) {
  const std::string patch = R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"headroom.dev/queue-allocation-gate"}]}])";
  const auto out = encode_response("admission.k8s.io/v1", "u-1", patch);
  const std::string prefix = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"patchType":"JSONPatch","patch":")";
  ASSERT_EQ(out.rfind(prefix, 0), 0u) << out;
  const auto b64 = out.substr(prefix.size(), out.size() - prefix.size() - 3);
  EXPECT_EQ(unbase64(b64), patch);
  EXPECT_EQ(encode_response("admission.k8s.io/v1", "u-\"2", ""),
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-\"2","allowed":true}})");
  EXPECT_NE(encode_response("", "", "", "malformed").find(R"("warnings":["malformed"])"), std::string::npos);
}

// Namespace enforcement: the pod goes behind the namespace's Queue whatever it says; the patch is
// applied here with the API server's JSON Patch semantics checked by hand (add on a member replaces).
TEST(admission, an_enforced_namespace_sets_the_queue_label_the_opt_in_and_the_gate) {
  // The test pod names queue "ci" and does not opt in: both are overridden.
  auto r = decoded(review("CREATE", pod(R"({"headroom.dev/queue-allocation-gate":"false"})", "")));
  auto m = enforce(r, "batch");
  EXPECT_EQ(m.what, outcome::enforced);
  EXPECT_EQ(m.patch,
            R"([{"op":"add","path":"/metadata/labels/headroom.dev~1queue","value":"batch"},)"
            R"({"op":"add","path":"/metadata/annotations/headroom.dev~1queue-allocation-gate","value":"true"},)"
            R"({"op":"add","path":"/spec/schedulingGates","value":[{"name":"headroom.dev/queue-allocation-gate"}]}])");
  EXPECT_NE(m.warning.find("'ci' was replaced"), std::string::npos) << m.warning;
  // No labels or annotations map: each is made; the gate already there is not added twice.
  const std::string bare = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[],)"
                           R"("schedulingGates":[{"name":"headroom.dev/queue-allocation-gate"}]}})";
  m = enforce(decoded(review("CREATE", bare)), "batch");
  EXPECT_EQ(m.patch, R"([{"op":"add","path":"/metadata/labels","value":{"headroom.dev/queue":"batch"}},)"
                     R"({"op":"add","path":"/metadata/annotations","value":{"headroom.dev/queue-allocation-gate":"true"}}])");
  EXPECT_EQ(m.warning, "");
  // Not a pod create: untouched.
  EXPECT_EQ(enforce(decoded(review("UPDATE", bare)), "batch").what, outcome::not_pod_create);
}

TEST(admission, a_denial_carries_its_reason_and_code) {
  const auto d = encode_denial("admission.k8s.io/v1", "u-1", "not read yet \"ns\"", 503);
  EXPECT_EQ(d, R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":false,)"
               R"("status":{"code":503,"message":"not read yet \"ns\""}}})");
}
