#pragma once

// Headless Chromium (Debian's `chromium`, installed by scripts/install-deps): a page as a real
// browser parses it (the serialized DOM, so an unescaped `<script>` would show up as an element),
// a screenshot of it, and the table rows of the DOM as text, for tests to compare with the store.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "testenv/cluster_fixture.hpp"

namespace headroom::testenv {

class browser {
 public:
  // The browser, or none with the reason (chromium missing).
  static bool available(std::string& why) {
    if (!binary().empty())
      return true;
    why = "chromium is not installed (scripts/install-deps installs it)";
    return false;
  }

  // The DOM after Chromium loaded `url`; an empty string with `why` on failure.
  static std::string dom(const std::string& url, std::string& why) {
    auto r = run_command(argv({"--dump-dom", url}));
    if (r.exit_code != 0 || r.out.find("<html") == std::string::npos) {
      why = "chromium --dump-dom " + url + " exited " + std::to_string(r.exit_code) + ": " + r.err.substr(0, 400);
      return {};
    }
    return r.out;
  }

  // A PNG of `url` at 1280×900 written to `png`.
  static bool screenshot(const std::string& url, const std::filesystem::path& png, std::string& why) {
    std::filesystem::create_directories(png.parent_path());
    std::filesystem::remove(png);
    auto r = run_command(argv({"--window-size=1280,900", "--hide-scrollbars", "--screenshot=" + png.string(), url}));
    std::error_code ec;
    if (r.exit_code != 0 || std::filesystem::file_size(png, ec) < 1024) {
      why = "chromium --screenshot " + url + " exited " + std::to_string(r.exit_code) + ": " + r.err.substr(0, 400);
      return false;
    }
    return true;
  }

  // The cells of every <tr> in <tbody> elements, as text (entities decoded, tags dropped).
  static std::vector<std::vector<std::string>> body_rows(const std::string& dom) {
    std::vector<std::vector<std::string>> rows;
    for (size_t body = dom.find("<tbody"); body != std::string::npos; body = dom.find("<tbody", body + 1)) {
      const size_t body_end = dom.find("</tbody>", body);
      for (size_t tr = dom.find("<tr", body); tr < body_end; tr = dom.find("<tr", tr + 1)) {
        const size_t tr_end = std::min(dom.find("</tr>", tr), body_end);
        std::vector<std::string> cells;
        for (size_t td = dom.find("<td", tr); td < tr_end; td = dom.find("<td", td + 1)) {
          const size_t open = dom.find('>', td) + 1;
          cells.push_back(text_of(dom.substr(open, dom.find("</td>", open) - open)));
        }
        rows.push_back(std::move(cells));
      }
    }
    return rows;
  }

  // Directory for a test's artifacts (screenshots): $HEADROOM_TEST_OUTPUT or ./test-output.
  static std::filesystem::path output_dir(const std::string& test) {
    const char* env = std::getenv("HEADROOM_TEST_OUTPUT");
    return std::filesystem::absolute(env && *env ? env : "test-output") / test;
  }

 private:
  static std::string binary() {
    for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
      if (std::filesystem::exists(p))
        return p;
    return {};
  }

  static std::vector<std::string> argv(std::vector<std::string> tail) {
    // A fresh profile per run; --no-sandbox because tests run as root on CI machines.
    static const std::string profile = std::filesystem::temp_directory_path() / ("headroom-chromium-" + std::to_string(::getpid()));
    std::vector<std::string> a{binary(),           "--headless=new",        "--no-sandbox",       "--disable-gpu",
                               "--no-first-run",   "--disable-extensions",  "--user-data-dir=" + profile,
                               "--virtual-time-budget=5000"};
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  }

  static std::string text_of(const std::string& html) {
    std::string out;
    bool in_tag = false;
    for (char c : html) {
      if (c == '<')
        in_tag = true;
      else if (c == '>')
        in_tag = false;
      else if (!in_tag)
        out += c;
    }
    for (auto [from, to] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}})
      for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + 1))
        out.replace(at, std::string{from}.size(), to);
    return out;
  }
};

}  // namespace headroom::testenv
