// Where tokenmill keeps what it owns for a user: $XDG_DATA_HOME/tokenmill, else
// ~/.local/share/tokenmill (the model store and the Batches API's state live under it).
#pragma once

#include <string>

namespace tokenmill {

std::string user_data_dir();

// Where tokenmill keeps what it can rebuild (the kernel tuner's choices):
// $XDG_CACHE_HOME/tokenmill, else ~/.cache/tokenmill.
std::string user_cache_dir();

}  // namespace tokenmill
