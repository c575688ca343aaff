// One mode's library linked whole and alone with the shared layers (CTest modes_link_alone): an
// undefined symbol here is a mode using another mode's code, or app/'s. Running it checks that the
// mode makes itself and names its keys.

#include <cstdio>

#include "modes/mode.hpp"

namespace headroom::modes::HEADROOM_MODE {
std::unique_ptr<mode> make();
}

int main() {
  auto m = headroom::modes::HEADROOM_MODE::make();
  std::printf("%.*s: %zu configuration keys\n", static_cast<int>(m->name().size()), m->name().data(), m->keys().size());
  return m->keys().empty() ? 1 : 0;
}
