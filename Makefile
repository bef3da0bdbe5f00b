# bcd — build, test and demo. Every target uses a Deno on PATH, or bootstraps the pinned one from npm into .tools/.
DENO_VERSION := 2.9.6
SYSTEM_DENO := $(shell command -v deno 2>/dev/null)
ifeq ($(SYSTEM_DENO),)
DENO := $(CURDIR)/.tools/node_modules/.bin/deno
DENO_DEP := $(DENO)
else
DENO := $(SYSTEM_DENO)
DENO_DEP :=
endif
export PATH := $(dir $(DENO)):$(PATH)
ROLES := node site ramdisk guest sim helper

.PHONY: deno test check ok bundle compile demo clean proto fmt deb ramdisk

deno: $(DENO_DEP)
	@$(DENO) --version | head -n 1

$(CURDIR)/.tools/node_modules/.bin/deno:
	@mkdir -p .tools
	npm install --prefix .tools --no-save --no-audit --no-fund --loglevel=error deno@$(DENO_VERSION)
	@test -x $@ || (echo "deno bootstrap failed: $@ missing" >&2; exit 1)

# The README's test command: every suite, one summary line "N passed, M failed" at the end.
test: $(DENO_DEP)
	@bash .ci/test_all.sh "$(DENO)"

check: $(DENO_DEP)
	$(DENO) task check

ok: check test

fmt: $(DENO_DEP)
	$(DENO) fmt

proto: $(DENO_DEP)
	$(DENO) task proto

bundle: $(DENO_DEP)
	$(DENO) task bundle

compile: $(DENO_DEP)
	$(DENO) task compile

# The provisioning ramdisk into dist/ramdisk/: vmlinuz + initrd (iPXE), bcd-ramdisk.iso (virtual media), the listing;
# see roles/ramdisk_image.ts (RAMDISK_ARGS: --gateway-ca PEM, --cmdline TEXT, --kernel-dir DIR).
ramdisk: $(DENO_DEP)
	$(DENO) task build:ramdisk $(RAMDISK_ARGS)

# Debian packages of the bundled agents (bcd-helper, bcd-node, bcd-site) into dist/deb/; see roles/deb.ts.
deb: $(DENO_DEP)
	$(DENO) task deb

demo: $(DENO_DEP)
	$(DENO) task demo

clean:
	rm -rf dist bin
