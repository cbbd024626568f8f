// Log's held warnings: while a command checks its inputs, warnings wait, so a refused
// command prints its error alone (issue 26: "warning: the backbone has random
// weights..." and others came before the error line of refused runs).
#include <catch2/catch.hpp>

#include <iostream>  // std::cerr
#include <sstream>   // std::ostringstream

#include "util/log.hpp"

namespace {
// Everything written to std::cerr while it lives.
class CaptureStderr {
 public:
  CaptureStderr() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CaptureStderr() { std::cerr.rdbuf(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};
}  // namespace

TEST_CASE("held warnings wait for release and are dropped without it", "[util][log]") {
  {
    CaptureStderr err;
    trainer::Log log(0);
    log.hold_warnings();
    const trainer::Log copy = log;  // what the set-up's helpers receive
    log.warn("first");
    copy.warn_this_rank("second");
    CHECK(err.text().empty());
    log.release_warnings();
    CHECK(err.text() == "warning: first\nwarning: [rank 0] second\n");
    log.warn("third");  // after the release: at once
    CHECK(err.text() == "warning: first\nwarning: [rank 0] second\nwarning: third\n");
  }
  {
    CaptureStderr err;
    {
      trainer::Log log(0);
      log.hold_warnings();
      log.warn("about a run that is refused");
    }  // an error ended the set-up: nothing printed
    CHECK(err.text().empty());
  }
  {
    CaptureStderr err;
    trainer::Log(0).warn("not held");  // the default: at once
    CHECK(err.text() == "warning: not held\n");
  }
}
