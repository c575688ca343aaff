// Cases for scripts/function-sizes (CTest function_sizes_scan): every function body the scan
// must find, each announced by an `expect:` line with its name and its size (the line of its `}`
// minus the line of its `{`, as clang-tidy's readability-function-size counts). Not compiled.
#include <string>
#define STRINGIFY(x) #x  /* { a brace in a directive */
#define MULTI(x) \
  { x; }

namespace outer::inner {

// expect: plain 2
int plain(int x) {
  return x;
}

// expect: braces_in_text 5
std::string braces_in_text() {
  const char open = '{';
  std::string s = "}}}{";  // } in a comment
  /* { in a block comment */
  return s + open + R"x({ "raw": "}" })x";
}

// expect: with_lambdas 6
int with_lambdas(int x) {
  auto f = [x](int y) { return x + y; };
  auto g = [&] {
    return f(1'000);
  };
  return g();
}

constexpr struct options {
  int initial = 1;
  int max = 30;
} defaults{.initial = 2, .max = 20};

const int table[] = {1, 2, 3};
// expect: operator() 2
const auto assigned = [](int a) -> int {
  return a;
};

enum class kind : unsigned char { create, get, patch };

struct holder : public base {
 public:
  // expect: holder 3
  holder(int a, int b) : a_{a}, b_(b) {
    a_ += b_;
    b_ = 0;
  }
  // expect: get 0
  int get() const { return a_; }
  // expect: operator() 2
  bool operator()(int x) const noexcept {
    return x == a_;
  }
  // expect: ~holder 1
  ~holder() {
  }

 private:
  int a_{0};
  int b_ = 1;
};

// expect: render 4
template <class Lookup, typename Section, template <class> class Keep>
std::string render(std::string_view text, Lookup&& lookup) {
  while (text.empty()) {
  }
  return {};
}

template <typename T>
// expect: trailing 3
auto trailing(T t) -> decltype(t + 1) {
  T u = t;
  return u + 1;
}

}  // namespace outer::inner

extern "C" {
// expect: c_entry 1
int c_entry(void) {
  return 0; }
}

// expect: main 4
int main() {
  if (true) {
  }
  return 0;
}
