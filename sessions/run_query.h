// Helpers of the run queries that are useful on their own: flattening a configuration JSON into
// dotted paths (the rows of the comparison view's configuration diff). The queries themselves
// are RunStore members (run_store.h), implemented in run_query.cpp.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace mpwb {

// {"optimizer":{"lr":0.1},"layers":[{"units":8}]} -> {"layers[0].units": "8", "optimizer.lr":
// "0.1"}; values are compact JSON text, a float setting in its float's shortest round-trip form
// ("0.01", not "0.009999999776482582"); empty objects and arrays are leaves ("{}", "[]").
// Throws StoreError(Invalid) naming `what` when the text is not JSON.
std::map<std::string, std::string> flatten_config(std::string_view json_text,
                                                  std::string_view what = "configuration");

}  // namespace mpwb
