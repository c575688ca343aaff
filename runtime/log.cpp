#include "runtime/log.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <type_traits>
#include <variant>

#include "runtime/json_writer.hpp"
#include "runtime/secrets.hpp"
#include "runtime/clock.hpp"
#include "runtime/rfc3339.hpp"

namespace headroom::runtime {

namespace {

std::mutex& write_mutex() {
  static std::mutex m;
  return m;
}

std::string timestamp_now() {
  // Whole milliseconds first: rounding the double could carry a .9996 into the next second's line.
  return format_rfc3339(static_cast<double>(real_clock().wall_ms()) / 1000.0, 3);
}

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n <= 0)
      return;  // stderr closed or broken: logging must never take the process down
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::optional<log_level> parse_log_level(std::string_view text) {
  if (text == "debug")
    return log_level::debug;
  if (text == "info")
    return log_level::info;
  if (text == "warn" || text == "warning")
    return log_level::warn;
  if (text == "error")
    return log_level::error;
  if (text == "off")
    return log_level::off;
  return std::nullopt;
}

std::string_view to_string(log_level level) {
  switch (level) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warn: return "warn";
    case log_level::error: return "error";
    case log_level::off: return "off";
  }
  return "unknown";
}

logger& logger::global() {
  static logger instance;
  return instance;
}

void logger::set_sink(sink s) {
  std::lock_guard<std::mutex> guard{write_mutex()};
  sink_ = std::move(s);
  custom_sink_.store(static_cast<bool>(sink_), std::memory_order_release);
}

void logger::write(log_level level, std::string_view actor, std::string_view msg,
                   std::initializer_list<log_field> fields) {
  // Values are redacted before they are written: a secret with characters JSON escapes (a PEM
  // key's newlines) would no longer match once escaped.
  json_writer w;
  w.begin_object().field("ts", timestamp_now()).field("level", to_string(level));
  w.field("actor", redact(actor)).field("msg", redact(msg));
  for (const auto& f : fields) {
    w.key(f.key);
    std::visit(
        [&w](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string_view>)
            w.value(redact(v));
          else
            w.value(v);
        },
        f.value);
  }
  w.end_object();
  std::string line = w.take();
  line += '\n';
  // And the rendered line once more, for a secret that only appears across a key and a value.
  line = redact(line);
  std::lock_guard<std::mutex> guard{write_mutex()};
  if (custom_sink_.load(std::memory_order_acquire))
    sink_(line);
  else
    write_all(STDERR_FILENO, line);
}

}  // namespace headroom::runtime
