// Catch2 v2 provides main() for the unit-test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
