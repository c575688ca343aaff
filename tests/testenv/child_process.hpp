#pragma once

// A program the test starts and stops (the headroom binary, Prometheus): stdout and stderr to a
// log file, SIGTERM (or any signal) on stop(), SIGKILL when it does not exit within 30 s or when
// the object goes.

#include <sys/types.h>

#include <string>
#include <vector>

namespace headroom::testenv {

class child_process {
 public:
  // argv[0] is the program's path; `env` entries are NAME=value (nothing else is inherited).
  child_process(std::vector<std::string> argv, std::vector<std::string> env, std::string log_path);
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Sends `sig` and waits for the exit; returns the wait status (-1 when it was not running).
  int stop(int sig = 15);
  bool alive() const;
  pid_t pid() const { return pid_; }
  // The log's last `bytes` bytes.
  std::string log(size_t bytes = 6000) const;

 private:
  std::string log_path_;
  pid_t pid_ = -1;
};

// A process's CPU time so far (user + system, in seconds), from /proc; 0 when it cannot be read.
double cpu_seconds(pid_t pid);

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

}  // namespace headroom::testenv
