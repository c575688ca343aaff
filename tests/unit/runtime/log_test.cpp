#include "runtime/log.hpp"

#include <gtest/gtest.h>

#include "runtime/config.hpp"
#include "runtime/secrets.hpp"

using namespace headroom::runtime;

namespace {

struct captured_logs : ::testing::Test {
  captured_logs() {
    logger::global().set_sink([this](std::string_view line) { lines.emplace_back(line); });
    logger::global().set_level(log_level::debug);
  }
  ~captured_logs() override {
    logger::global().set_sink(nullptr);
    logger::global().set_level(log_level::info);
    secret_registry::global().clear();
  }
  std::string all() const {
    std::string out;
    for (const auto& l : lines)
      out += l;
    return out;
  }
  std::vector<std::string> lines;
};

}  // namespace

TEST_F(captured_logs, one_json_line_per_event_with_fields) {
  log::info("placeholder_pair/ci/3", "pair ready", {{"namespace", "ci"}, {"ready_pairs", 4}, {"confirmed", true}});
  ASSERT_EQ(lines.size(), 1u);
  const auto& l = lines[0];
  EXPECT_EQ(l.back(), '\n');
  EXPECT_EQ(std::count(l.begin(), l.end(), '\n'), 1);
  EXPECT_NE(l.find("\"level\":\"info\",\"actor\":\"placeholder_pair/ci/3\",\"msg\":\"pair ready\""), std::string::npos) << l;
  EXPECT_NE(l.find("\"namespace\":\"ci\",\"ready_pairs\":4,\"confirmed\":true}"), std::string::npos) << l;
  EXPECT_EQ(l.rfind("{\"ts\":\"", 0), 0u);
}

TEST_F(captured_logs, level_filters_events) {
  logger::global().set_level(log_level::warn);
  log::info("a", "hidden");
  log::warn("a", "shown");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("shown"), std::string::npos);
}

TEST_F(captured_logs, control_characters_are_escaped) {
  log::info("a", "line one\nline \"two\"\t\x01");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("line one\\nline \\\"two\\\"\\t\\u0001"), std::string::npos) << lines[0];
}

// A configured secret never appears in a log line, wherever it was put: the message, a field, the
// actor name, an error text, or a multi-line PEM that JSON would escape.
TEST_F(captured_logs, configured_secrets_never_reach_the_logs) {
  const std::string token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
  const std::string pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----";
  secret_registry::global().add(token);
  secret_registry::global().add(pem);
  log::info("github/auth", "installation token " + token + " acquired");
  log::warn("github/auth", "refresh failed", {{"authorization", "Bearer " + token}, {"body", pem}});
  log::error("listener/" + token, "odd actor name");
  for (const auto& l : lines) {
    EXPECT_EQ(l.find(token), std::string::npos) << l;
    EXPECT_EQ(l.find("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo"), std::string::npos) << l;
    EXPECT_NE(l.find("[REDACTED]"), std::string::npos) << l;
  }
  // Errors shown to the user pass the same registry.
  config_error e{"github.token", "rejected value " + token};
  EXPECT_EQ(redact(e.message()).find(token), std::string::npos);
}

TEST(secret_registry, refuses_values_too_short_to_mask_safely) {
  secret_registry r;
  EXPECT_FALSE(r.add("abc"));
  EXPECT_TRUE(r.add("abcdefgh"));
  EXPECT_EQ(r.redact("x abcdefgh y abc"), "x [REDACTED] y abc");
}

// Single-use and rotating secrets are kept only while they can matter: the newest ephemeral_max,
// so one JIT configuration per job does not grow the registry (nor every log line's scan) forever.
TEST(secret_registry, ephemeral_secrets_are_bounded_and_the_oldest_forgotten) {
  secret_registry r;
  ASSERT_TRUE(r.add("permanent-token-0123456789"));
  std::vector<std::string> jit;
  for (size_t i = 0; i < secret_registry::ephemeral_max + 10; ++i) {
    jit.push_back("jit-config-" + std::to_string(i) + "-abcdefghij");
    ASSERT_TRUE(r.add_ephemeral(jit.back()));
  }
  EXPECT_EQ(r.size(), secret_registry::ephemeral_max + 1) << "the newest ephemeral_max and the permanent one";
  EXPECT_EQ(r.redact(jit.back()), "[REDACTED]") << "the newest is masked";
  EXPECT_EQ(r.redact(jit.front()), jit.front()) << "the oldest was forgotten";
  EXPECT_EQ(r.redact("a permanent-token-0123456789 b"), "a [REDACTED] b") << "permanent secrets stay";
  // A permanent secret that was also seen as ephemeral is not forgotten with it.
  secret_registry both;
  ASSERT_TRUE(both.add_ephemeral("shared-secret-value"));
  ASSERT_TRUE(both.add("shared-secret-value"));
  for (size_t i = 0; i < secret_registry::ephemeral_max; ++i)
    both.add_ephemeral("filler-" + std::to_string(i) + "-xxxxxxxx");
  EXPECT_EQ(both.redact("shared-secret-value"), "[REDACTED]");
}

TEST(secret_registry, a_longer_secret_containing_a_shorter_one_is_masked_whole) {
  secret_registry r;
  ASSERT_TRUE(r.add_ephemeral("abcdef"));
  ASSERT_TRUE(r.add("xxabcdefxx"));
  EXPECT_EQ(r.redact("[xxabcdefxx] [abcdef]"), "[[REDACTED]] [[REDACTED]]");
}
