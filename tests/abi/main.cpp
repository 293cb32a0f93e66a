// Links the two builds of roundtrip.cpp into one program and runs both: each must run its own
// build's code.
auto roundtrip_plain(int v) -> int;
auto roundtrip_model(int v) -> int;

auto main() -> int {
  return roundtrip_plain(7) == 7 && roundtrip_model(8) == 8 ? 0 : 1;
}
