#pragma once

// A test peer process (a Go program under tests/peers/): built by its build.sh, started with
// --state-dir, ready once it writes ready.json; stopped with the fixture, and by itself when the
// test process dies.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace headroom::testpeer {

struct http_reply {
  long status = 0;
  std::string body;
  std::string link;          // the Link header, if any
  std::string content_type;  // the Content-Type header, if any
};

// POST `body` (JSON) to `url`, or GET when the body is empty; `headers`: extra "Name: value" lines.
http_reply http_call(const std::string& url, std::string_view body = {}, const std::vector<std::string>& headers = {});

class peer_process {
 public:
  // `build_script` relative to the source tree (e.g. "tests/peers/bigfleet-shard/build.sh").
  static std::unique_ptr<peer_process> start(const std::string& build_script, std::vector<std::string> args,
                                             std::string& why);
  ~peer_process();

  const std::string& dir() const { return dir_; }
  // A string field of ready.json.
  std::string ready(const std::string& key) const;
  std::string log() const;
  std::string read(const std::string& file_in_dir) const;

 private:
  peer_process() = default;
  int pid_ = -1;
  std::string dir_, ready_;
};

}  // namespace headroom::testpeer
