// util/printable.hpp: input echoed in error lines shows control characters as escapes.
#include <catch2/catch.hpp>

#include <string>  // std::string

#include "util/printable.hpp"

TEST_CASE("printable escapes control characters and keeps the rest", "[util]") {
  using trainer::printable;
  CHECK(printable("plain path/a b.cfg") == "plain path/a b.cfg");
  CHECK(printable("bell\a") == "bell\\x07");
  CHECK(printable("two\nlines") == "two\\x0alines");
  CHECK(printable("\x1b[31mred") == "\\x1b[31mred");
  CHECK(printable(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 stays readable
}
