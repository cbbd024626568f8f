// The program of each layer's link check (CMakeLists.txt, TRAINER_CHECK_LAYER_LINKS):
// it is linked with every object of one layer and with the layers below it that
// src/LAYERS allows, and never run. Linking it is the check: a call into a higher
// layer leaves an undefined reference.
int main() { return 0; }
