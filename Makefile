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

# Installs under PREFIX, stripped, and records what went where (files and the
# directories it had to make), for `make uninstall`. Builds only what is
# installed, not the tests. A build directory copied from another tree (its
# cache names another source directory, which cmake refuses) is made afresh.
#
# The AppArmor profile (contrib/apparmor/stockade.in, for PREFIX/bin/stockade)
# is installed under PREFIX/share/stockade/apparmor with its helper, which
# then copies it into /etc/apparmor.d only where the host's apparmor_parser
# accepts it (AppArmor 3 refuses its `userns` rule, and a refused profile
# there fails apparmor.service at every boot), and loads it where AppArmor
# runs. A staged install (DESTDIR) leaves /etc alone: the target host decides
# when the helper runs there. Without AppArmor the install still succeeds.
APPARMOR_HELPER = $(PREFIX)/share/stockade/apparmor/stockade-apparmor
INSTALL_DIRS := bin share/stockade/profiles share/stockade/apparmor share/man/man1 \
                share/bash-completion/completions share/zsh/vendor-completions

install: deps-build
	@if [ -f $(BUILD)/CMakeCache.txt ] && \
	    ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$(CURDIR)" $(BUILD)/CMakeCache.txt; then \
	  echo "$(BUILD) was configured for another source tree: configuring it afresh"; \
	  rm -rf $(BUILD); fi
	@cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target stockade
	@mkdir -p $(BUILD) && : > $(BUILD)/install_dirs.new
	@for d in $(INSTALL_DIRS); do \
	  p="$(DESTDIR)$(PREFIX)/$$d"; \
	  while [ "$$p" != "$(DESTDIR)$(PREFIX)" ] && [ ! -e "$$p" ]; do echo "$$p"; p=$$(dirname "$$p"); done; \
	done | sort -u -r >> $(BUILD)/install_dirs.new
	cmake --install $(BUILD) --prefix $(PREFIX) --strip
	@cat $(BUILD)/install_dirs.new >> $(BUILD)/install_dirs.txt; rm -f $(BUILD)/install_dirs.new
	@if [ -n "$(DESTDIR)" ]; then \
	  echo "staged install: /etc/apparmor.d left alone; on the target run sudo sh $(APPARMOR_HELPER) install"; \
	else sh "$(APPARMOR_HELPER)" install || true; fi

uninstall:
	@test -f "$(BUILD)/install_manifest.txt" || { echo "nothing installed from $(BUILD)"; exit 0; }
	@helper=$$(grep -m 1 '/share/stockade/apparmor/stockade-apparmor$$' "$(BUILD)/install_manifest.txt"); \
	if [ -z "$(DESTDIR)" ] && [ -f "$$helper" ]; then sh "$$helper" remove || true; fi
	sed 's|^|$(DESTDIR)|' "$(BUILD)/install_manifest.txt" | tr '\n' '\0' | xargs -0 -r rm -f
	@if [ -f $(BUILD)/install_dirs.txt ]; then \
	  sort -u -r $(BUILD)/install_dirs.txt | while read -r d; do rmdir "$$d" 2>/dev/null || true; done; \
	  rm -f $(BUILD)/install_dirs.txt; fi
	@rm -f "$(BUILD)/install_manifest.txt"

deb: build
	cd $(BUILD) && cpack -G DEB

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
