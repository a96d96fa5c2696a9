# The two commands of the README, and what they stand on.
#   make demo   install what is missing, build, run a real job in the sandbox
#   make check  install what is missing, build, run every test (normal + ASan/UBSan),
#               then fuzz the parsers for a bounded time

# Where the builds go. O=DIR puts all three under DIR, so that the source tree
# may be read-only: make check O=/var/tmp/stockade-build
O          ?= .
BUILD      ?= $(O)/build
ASAN_BUILD ?= $(O)/build-asan
FUZZ_BUILD ?= $(O)/build-fuzz
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja
# A compiler cache, where one is installed, for rebuilds of a second checkout.
ifneq ($(shell command -v ccache 2>/dev/null),)
CMAKE_GEN  += -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
endif

.PHONY: test-root all deps deps-build build build-asan check check-normal check-asan fuzz demo clean format install uninstall deb

PREFIX ?= /usr/local

all: build

deps:
	@sh scripts/install-deps.sh test

# Only what building the binary and the demo need.
deps-build:
	@sh scripts/install-deps.sh build

build: deps
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DSTOCKADE_SANITIZE=ON -DBUILD_TESTING=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

check-normal: build test-root
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

check-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# The parsers of outside input (profiles, OCI seccomp files) under libFuzzer,
# for a bounded time each.
fuzz: deps
	@BUILD_DIR="$(abspath $(FUZZ_BUILD))" sh scripts/fuzz.sh $(FUZZ_SECONDS)

FUZZ_SECONDS ?= 30

# A clean Debian 12 root for the package test and a Debian 13 root with
# apparmor_parser 4 for the AppArmor profile's syntax test, each made once
# with debootstrap, the kernel the cgroup v2 VM test boots, fetched once with
# apt, the Vite test's npm packages and Node 18 for the TypeScript client's
# suite, installed once from the registry.
test-root: deps
	@sh scripts/clean-root.sh
	@sh scripts/apparmor-root.sh
	@sh scripts/vm-kernel.sh
	@sh scripts/vite-app.sh
	@sh scripts/node18.sh

check: check-normal check-asan fuzz

# The binary alone (the tests are not configured: their toolchain is not
# installed for a demo), one real job, and the command that runs the suite.
demo: deps-build
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target stockade
	@sh scripts/demo.sh $(BUILD)/stockade
	@echo "--- the whole suite (installs the test toolchain as root): make check"

# Installs under DESTDIR/PREFIX, stripped, from a build of its own
# (INSTALL_BUILD, configured without the tests: only the binary is built),
# and records what went where (each file with its sha256, and the
# directories it had to make) for `make uninstall`, which removes exactly
# that and refuses, removing nothing, when a recorded path is outside
# DESTDIR/PREFIX or a file is no longer the one install made
# (scripts/install.sh). A build directory copied from another tree (its
# cache names another source directory, which cmake refuses) is made afresh.
#
# The AppArmor profile (contrib/apparmor/stockade.in, for PREFIX/bin/stockade)
# is installed under PREFIX/share/stockade/apparmor with its helper, which
# then copies it into /etc/apparmor.d only where the host's apparmor_parser
# accepts it (AppArmor 3 refuses its `userns` rule, and a refused profile
# there fails apparmor.service at every boot), and loads it where AppArmor
# runs. A staged install (DESTDIR) leaves /etc alone: the target host decides
# when the helper runs there. Without AppArmor the install still succeeds.
INSTALL_BUILD ?= $(O)/build-install

install: deps-build
	@JOBS=$(JOBS) sh scripts/install.sh install "$(INSTALL_BUILD)" "$(PREFIX)" "$(DESTDIR)"

uninstall:
	@sh scripts/install.sh uninstall "$(INSTALL_BUILD)" "$(PREFIX)" "$(DESTDIR)"

deb: build
	cd $(BUILD) && cpack -G DEB

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(INSTALL_BUILD)
