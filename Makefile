# The two commands of the README: `make demo` runs a relay and an agent on
# the simulator with a demo user; `make test` runs every test.

GO      ?= go
BIN     := bin
VERSION ?= $(shell ./scripts/version.sh)
LDFLAGS := -X tradebridge/agent.Version=$(VERSION)

.PHONY: all build demo test test-short test-deps examples-deps vet bench fuzz windows clean clients addon ninjatrader-export installer release

## all (plain make): the relay and agent binaries, and the NinjaTrader
## add-on's export archive.
all: build ninjatrader-export

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/relay ./cmd/relay
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/agent ./cmd/agent

## demo: start a relay and an agent on the simulator, create a demo user,
## print a working curl line (Ctrl-C stops both).
demo: build
	./scripts/demo.sh

## test: vet, the Windows vet and build of the agent, the NinjaScript add-on's
## compile and self-test, every test with the race detector (among them
## installer/, which builds the signed MSI and inspects it), and the
## relay's end-to-end tests once more with the agent trading through the
## NinjaTrader bridge and a fake add-on (TRADEBRIDGE_TEST_PLATFORM).
test: test-deps vet windows addon
	$(GO) test -race -count=1 ./...
	TRADEBRIDGE_TEST_PLATFORM=ninjatrader $(GO) test -race -count=1 ./relay/

test-short:
	$(GO) test -short -count=1 ./...

vet:
	$(GO) vet ./...

## windows: the agent must always build and vet for Windows (its service,
## Event Log, ACL, proxy and port-owner code is in _windows.go files; vet
## compiles their _windows_test.go files too, which run on a Windows
## machine). -trimpath, as make installer builds it, so the installer's
## test reuses this compile.
windows:
	GOOS=windows GOARCH=amd64 $(GO) vet ./agent/... ./cmd/agent/... ./trading/bridge/ninjatrader/...
	GOOS=windows GOARCH=amd64 $(GO) build -trimpath -o /dev/null ./cmd/agent

## addon: compile the NinjaScript add-on (installer/ninjatrader) with Mono's
## mcs against stand-ins of NinjaTrader's types, and run its self-test under
## mono. The real check is importing it into NinjaTrader.
addon:
	./installer/ninjatrader/build.sh addon

## ninjatrader-export: build/TradeBridgeNinjaTraderAddOn.zip, the archive
## NinjaTrader imports (Tools > Import > NinjaScript Add-On...).
ninjatrader-export:
	./installer/ninjatrader/build.sh export

## installer: the agent's Windows installer, signed (Authenticode), in
## build/installer/: agent.exe and TradeBridgeAgent-<version>[-TEST]-x64.msi,
## built on Linux with wixl and osslsigncode. A test certificate ("-TEST" in
## the name) unless SIGN_PKCS11_* (a hardware key), SIGN_CERT and SIGN_KEY or
## SIGN_PKCS12 and SIGN_PASS_FILE name a real one (installer/README.md).
installer:
	GO=$(GO) VERSION=$(VERSION) OUT=build/installer ./scripts/build-installer.sh

## release: the release installer in build/release/, refused unless HEAD
## carries the tag vMAJOR.MINOR.PATCH, the tree is clean, a PKCS#11 key signs
## (SIGN_PKCS11_MODULE, SIGN_PKCS11_KEY, SIGN_PKCS11_CERT, SIGN_PIN_FILE) and
## both signatures carry a timestamp (SIGN_TIMESTAMP_URL) that verifies with
## their signatures against SIGN_CA_FILE (installer/README.md, "Release").
release:
	GO=$(GO) RELEASE=1 OUT=build/release ./scripts/build-installer.sh

## test-deps: what the tests need beyond Go: Debian's python3 packages
## (websocket-client, requests, the Python client's urllib3, six, dateutil,
## certifi), chromium, mono-mcs (the add-on's compile) and npm ci in
## clients/; quick when all is there.
test-deps:
	./scripts/test-deps.sh

## examples-deps: what the Python examples need and no more: Debian's
## python3-websocket (examples/bot.py) and python3-requests
## (examples/compat_bot.py); quick when they are there.
examples-deps:
	./scripts/test-deps.sh examples

## clients: regenerate clients/ (TypeScript: @hey-api/openapi-ts; Python:
## Swagger Codegen, on Java) from the relay's OpenAPI documents: the trading
## API's and the Management API's.
clients: test-deps
	./scripts/gen-clients.sh

## bench: the benchmarks named in the issues, with their ratios.
bench:
	$(GO) test -p 1 -run '^$$' -bench . -benchmem -count=1 ./...

## fuzz: every fuzz target (func FuzzX, found by scripts/fuzz.sh) for
## FUZZTIME each, one after another, stopping at the first finding:
## make fuzz FUZZTIME=30s.
FUZZTIME ?= 10m
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

clean:
	rm -rf $(BIN) .demo build
