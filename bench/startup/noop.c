/* The floor of a plugin's start-up for `make bench` (bench/startup/bench.sh): a static
 * executable, linked as the plugins are, that does nothing. What a plugin's bare VERSION
 * exec costs beyond this one is its own: its size, its relocations, its static initialisers and
 * C++ runtime, and the VERSION answer. */
int main(void) { return 0; }
