// GitHub credentials as an ARC user brings them: a Secret with ARC's keys (github_token, or
// github_app_id + github_app_installation_id + github_app_private_key), mounted by the chart; or
// headroom's own keys, or environment variables. A missing key names the Secret and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "modes/shared/start.hpp"

namespace headroom::modes {
namespace {

struct secret_dir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("headroom-creds-" + std::to_string(::getpid()) + "-" +
                                                                          std::to_string(counter++));
  secret_dir() { std::filesystem::create_directories(dir); }
  ~secret_dir() { std::filesystem::remove_all(dir); }
  secret_dir& key(const std::string& name, const std::string& value) {
    std::ofstream(dir / name) << value;
    return *this;
  }
  std::map<std::string, std::string> env() const {
    return {{"HEADROOM_GITHUB_SECRET_DIR", dir.string()}, {"HEADROOM_GITHUB_SECRET_NAME", "arc-github"}};
  }
  static inline int counter = 0;
};

const std::string pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n";

std::string error_of(const std::variant<github::credentials, std::string>& r) {
  return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : std::string{"(accepted)"};
}

TEST(credentials, an_arc_secret_with_a_token_works_unchanged) {
  secret_dir s;
  s.key("github_token", "ghp_arcarcarcarcarcarcarc0123456789\n");
  auto r = github_credentials(s.env());
  ASSERT_TRUE(std::holds_alternative<github::credentials>(r)) << error_of(r);
  EXPECT_EQ(std::get<github::credentials>(r).personal_access_token, "ghp_arcarcarcarcarcarcarc0123456789") << "the newline is trimmed";
}

TEST(credentials, an_arc_secret_with_a_github_app_works_unchanged) {
  secret_dir s;
  s.key("github_app_id", "12345").key("github_app_installation_id", "678\n").key("github_app_private_key", pem);
  auto r = github_credentials(s.env());
  ASSERT_TRUE(std::holds_alternative<github::credentials>(r)) << error_of(r);
  const auto& c = std::get<github::credentials>(r);
  EXPECT_EQ(c.app_id, "12345");
  EXPECT_EQ(c.installation_id, 678);
  EXPECT_EQ(c.private_key_pem, pem) << "the PEM keeps its text";
}

// The scheduler's App may be installed in several organizations: without an installation id it
// finds each one's (installation_id 0); the scale sets' listener still needs one.
TEST(credentials, an_app_without_an_installation_id_is_the_schedulers_to_resolve) {
  secret_dir s;
  s.key("github_app_id", "12345").key("github_app_private_key", pem);
  auto r = github_credentials(s.env(), true);
  ASSERT_TRUE(std::holds_alternative<github::credentials>(r)) << error_of(r);
  EXPECT_EQ(std::get<github::credentials>(r).installation_id, 0);
  EXPECT_EQ(std::get<github::credentials>(r).private_key_pem, pem);
  EXPECT_NE(error_of(github_credentials(s.env())).find("github_app_installation_id (or installation-id) is missing"), std::string::npos);
  std::map<std::string, std::string> env{{"HEADROOM_GITHUB_APP_ID", "7"}, {"HEADROOM_GITHUB_APP_PRIVATE_KEY", pem}};
  auto from_env = github_credentials(env, true);
  ASSERT_TRUE(std::holds_alternative<github::credentials>(from_env)) << error_of(from_env);
  EXPECT_EQ(std::get<github::credentials>(from_env).installation_id, 0);
  env["HEADROOM_GITHUB_APP_INSTALLATION_ID"] = "x1";
  EXPECT_EQ(error_of(github_credentials(env, true)), "HEADROOM_GITHUB_APP_INSTALLATION_ID: expected the App installation's number, found 'x1'")
      << "one that is given must still be a number";
}

TEST(credentials, headroom_key_names_are_aliases) {
  secret_dir s;
  s.key("app-id", "9").key("installation-id", "10").key("private-key", pem);
  auto r = github_credentials(s.env());
  ASSERT_TRUE(std::holds_alternative<github::credentials>(r)) << error_of(r);
  EXPECT_EQ(std::get<github::credentials>(r).installation_id, 10);
}

TEST(credentials, a_missing_or_bad_key_names_the_secret_and_the_key) {
  {
    secret_dir s;
    s.key("github_app_id", "1").key("github_app_installation_id", "2");
    EXPECT_EQ(error_of(github_credentials(s.env())),
              "Secret arc-github: key github_app_private_key (or private-key) is missing; a GitHub App needs it with github_app_id");
  }
  {
    secret_dir s;
    s.key("github_app_id", "1").key("github_app_private_key", pem);
    EXPECT_EQ(error_of(github_credentials(s.env())),
              "Secret arc-github: key github_app_installation_id (or installation-id) is missing; a GitHub App needs it with github_app_id");
  }
  {
    secret_dir s;
    s.key("github_app_id", "1").key("github_app_installation_id", "12x").key("github_app_private_key", pem);
    EXPECT_EQ(error_of(github_credentials(s.env())),
              "Secret arc-github: github_app_installation_id: expected the App installation's number, found '12x'");
  }
  {
    secret_dir s;
    s.key("github_token", "  \n");
    EXPECT_EQ(error_of(github_credentials(s.env())), "Secret arc-github: key github_token is empty");
  }
  {
    secret_dir s;
    s.key("unrelated", "x");
    const auto e = error_of(github_credentials(s.env()));
    EXPECT_EQ(e.rfind("Secret arc-github: no GitHub credentials: set key github_token", 0), 0u) << e;
  }
}

TEST(credentials, the_environment_wins_over_the_secret_and_nothing_at_all_says_what_to_set) {
  secret_dir s;
  s.key("github_token", "ghp_fromthesecret0123456789");
  auto env = s.env();
  env["HEADROOM_GITHUB_TOKEN"] = "ghp_fromtheenvironment0123456789";
  auto r = github_credentials(env);
  ASSERT_TRUE(std::holds_alternative<github::credentials>(r)) << error_of(r);
  EXPECT_EQ(std::get<github::credentials>(r).personal_access_token, "ghp_fromtheenvironment0123456789");
  EXPECT_NE(error_of(github_credentials({})).find("HEADROOM_GITHUB_SECRET_DIR"), std::string::npos);
}

// The scheduler's second App, for personal accounts (seed 003: one App per account kind), from the
// Secret or the environment; it needs the first App, and is not the first App again.
TEST(credentials, a_second_app_for_personal_accounts) {
  const std::string user_pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIC\n-----END RSA PRIVATE KEY-----\n";
  {
    secret_dir s;
    s.key("github_app_id", "12345").key("github_app_private_key", pem);
    s.key("github_user_app_id", "67890\n").key("github_user_app_private_key", user_pem);
    auto r = github_credentials(s.env(), true);
    ASSERT_TRUE(std::holds_alternative<github::credentials>(r)) << error_of(r);
    auto c = std::get<github::credentials>(r);
    EXPECT_EQ(github_user_app(s.env(), c), "");
    EXPECT_EQ(c.user_app_id, "67890");
    EXPECT_EQ(c.user_app_private_key_pem, user_pem);
  }
  {
    secret_dir s;
    s.key("github_app_id", "12345").key("github_app_private_key", pem).key("user-app-id", "67890");
    auto c = std::get<github::credentials>(github_credentials(s.env(), true));
    EXPECT_EQ(github_user_app(s.env(), c),
              "Secret arc-github: key github_user_app_private_key (or user-private-key) is missing; the second GitHub App needs it "
              "with github_user_app_id");
    EXPECT_EQ(c.user_app_id, "");
  }
  {
    secret_dir s;
    s.key("github_app_id", "12345").key("github_app_private_key", pem);
    auto c = std::get<github::credentials>(github_credentials(s.env(), true));
    EXPECT_EQ(github_user_app(s.env(), c), "") << "no second App: the first serves every account";
    EXPECT_EQ(c.user_app_id, "");
  }
  std::map<std::string, std::string> env{{"HEADROOM_GITHUB_TOKEN", "ghp_onlyapatonlyapat0123456789"},
                                         {"HEADROOM_GITHUB_USER_APP_ID", "67890"},
                                         {"HEADROOM_GITHUB_USER_APP_PRIVATE_KEY", user_pem}};
  auto pat = std::get<github::credentials>(github_credentials(env, true));
  EXPECT_EQ(github_user_app(env, pat).rfind("HEADROOM_GITHUB_USER_APP_ID: a second GitHub App (for personal accounts) needs the first", 0),
            0u);
  env = {{"HEADROOM_GITHUB_APP_ID", "7"}, {"HEADROOM_GITHUB_APP_PRIVATE_KEY", pem}, {"HEADROOM_GITHUB_USER_APP_ID", "7"},
         {"HEADROOM_GITHUB_USER_APP_PRIVATE_KEY", user_pem}};
  auto same = std::get<github::credentials>(github_credentials(env, true));
  EXPECT_EQ(github_user_app(env, same).rfind("HEADROOM_GITHUB_USER_APP_ID: the second GitHub App is the first one", 0), 0u);
  env.erase("HEADROOM_GITHUB_USER_APP_PRIVATE_KEY");
  env["HEADROOM_GITHUB_USER_APP_ID"] = "8";
  EXPECT_EQ(github_user_app(env, same),
            "HEADROOM_GITHUB_USER_APP_PRIVATE_KEY or HEADROOM_GITHUB_USER_APP_PRIVATE_KEY_FILE: required with HEADROOM_GITHUB_USER_APP_ID");
}

}  // namespace
}  // namespace headroom::modes
