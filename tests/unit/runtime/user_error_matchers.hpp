#pragma once
// Helpers for runtime tests: run a callable that must throw UserError and check its
// message and hint contain given text.
#include <functional>  // std::function
#include <string>      // std::string

#include <catch2/catch.hpp>  // REQUIRE, FAIL, INFO

#include "util/error.hpp"  // UserError

namespace trainer::test {

// The UserError `f` throws; fails the test when it throws nothing or something else.
inline UserError user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e;
  }
  FAIL("expected a UserError");
  return UserError("unreachable");
}

inline void require_user_error(const std::function<void()>& f, const std::string& in_message,
                               const std::string& in_hint = {}) {
  const UserError e = user_error_of(f);
  INFO("message: " << e.what() << "\nhint: " << e.hint());
  REQUIRE(std::string(e.what()).find(in_message) != std::string::npos);
  if (!in_hint.empty()) REQUIRE(e.hint().find(in_hint) != std::string::npos);
  REQUIRE(e.exit_code() == kExitUsage);
}

}  // namespace trainer::test
