#include "runtime/cli.h"

int main(int argc, char** argv) {
    return stockade::runCli(argc, argv);
}
