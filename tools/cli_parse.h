// STRATA_TOOL_PARSE: CLI11_PARSE for the command-line tools, with a refused flag ending the run as one line
// and exit 1.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

namespace strata::tools {

// Parses `argc`/`argv` into `app`: -1 when the tool goes on; 0 after --help (printed); 1 after a
// refused or missing flag, printed as "<program>: <what CLI11 says> (see --help)" on stderr, where
// CLI11_PARSE would exit with its own codes (105, 106, ...).
inline int parse_tool_flags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
    std::fprintf(stderr, "%s: %s (see --help)\n",
                 slash      ? slash + 1
                 : argc > 0 ? argv[0]
                            : "strata",
                 e.what());
    return 1;
  }
}

}  // namespace strata::tools

#define STRATA_TOOL_PARSE(app, argc, argv)                                                 \
  if (const int strata_tool_parse_rc = ::strata::tools::parse_tool_flags(app, argc, argv); \
      strata_tool_parse_rc >= 0)                                                           \
  return strata_tool_parse_rc
