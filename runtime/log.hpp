#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace headroom::runtime {

enum class log_level { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

std::optional<log_level> parse_log_level(std::string_view text);
std::string_view to_string(log_level level);

// One structured field of a log line; the value is rendered to JSON when the field is made.
struct log_field {
  log_field(std::string_view key, std::string_view value) : key(key), value(value) {}
  log_field(std::string_view key, const std::string& value) : log_field(key, std::string_view{value}) {}
  log_field(std::string_view key, const char* value) : log_field(key, std::string_view{value}) {}
  log_field(std::string_view key, bool value) : key(key), value(value) {}
  log_field(std::string_view key, double value) : key(key), value(value) {}
  template <class Int, class = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>>>
  log_field(std::string_view key, Int value) : key(key), value(static_cast<int64_t>(value)) {}

  std::string_view key;
  // A string is held as a view: a field lives only for the call to the logger that names it.
  std::variant<std::string_view, bool, double, int64_t> value;
};

// JSON lines on stderr: {"ts","level","actor","msg",…fields}, one event per line. Every line
// passes through the secret registry before it is written.
class logger {
 public:
  using sink = std::function<void(std::string_view line)>;

  static logger& global();

  void set_level(log_level level) { level_.store(level, std::memory_order_relaxed); }
  log_level level() const { return level_.load(std::memory_order_relaxed); }
  bool enabled(log_level level) const { return level >= this->level(); }

  // Tests capture lines; nullptr restores stderr.
  void set_sink(sink s);

  void write(log_level level, std::string_view actor, std::string_view msg,
             std::initializer_list<log_field> fields = {});

 private:
  std::atomic<log_level> level_{log_level::info};
  std::atomic<bool> custom_sink_{false};
  sink sink_;
};

namespace log {
inline void debug(std::string_view actor, std::string_view msg, std::initializer_list<log_field> f = {}) {
  if (logger::global().enabled(log_level::debug))
    logger::global().write(log_level::debug, actor, msg, f);
}
inline void info(std::string_view actor, std::string_view msg, std::initializer_list<log_field> f = {}) {
  if (logger::global().enabled(log_level::info))
    logger::global().write(log_level::info, actor, msg, f);
}
inline void warn(std::string_view actor, std::string_view msg, std::initializer_list<log_field> f = {}) {
  if (logger::global().enabled(log_level::warn))
    logger::global().write(log_level::warn, actor, msg, f);
}
inline void error(std::string_view actor, std::string_view msg, std::initializer_list<log_field> f = {}) {
  if (logger::global().enabled(log_level::error))
    logger::global().write(log_level::error, actor, msg, f);
}
}  // namespace log

}  // namespace headroom::runtime
