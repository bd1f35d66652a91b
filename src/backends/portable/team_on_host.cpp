// The team kernel (team_tiles.hpp, what portable-cuda runs) on the host execution space, so that
// tests check it against the oracle on machines without a GPU. Not a backend.
#include <stdexcept>
#include <type_traits>

#include "backends/common/kokkos_exec.hpp"
#include "backends/portable/portable_api.hpp"
#include "backends/portable/team_tiles.hpp"

namespace flashcore::portable {

std::string run_team_kernel_on_host(const Problem& p, const Tensors& t) {
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  const Tiles tiles = team::choose_tiles<HostExec>(p.head_dim);
  const std::string why = limits(p, tiles);
  if (!why.empty()) throw std::invalid_argument("team kernel on the host: " + why);
  kexec::on_host("portable team kernel", [&](const auto& exec) {
    using Exec = std::decay_t<decltype(exec)>;
    team::launch(exec, p, t, team::choose_tiles<Exec>(p.head_dim));
  });
  return std::to_string(tiles.bm) + "x" + std::to_string(tiles.bn) + " tiles, " + std::to_string(tiles.team_size) +
         " threads a team";
}

}  // namespace flashcore::portable
