#!/usr/bin/env bash
# Installs the Debian packages the lab runs (real servers), python-ldap needs to build, and the tests use:
# prometheus (a real server for the campaign's server-side queries) and chromium (the web UI's browser
# tests, headless through Playwright), poppler-utils (pdftotext: the report's print test reads its PDF),
# nodejs (runs panva's oidc-provider, the OpenID Provider of tests/oidc, which `make tools` gets from npm),
# apache2 with libapache2-mod-auth-openidc (a real OpenID Connect RP the tests start on loopback with their own
# config; policy-rc.d keeps Debian's apache2 service from starting).
# Called by `make setup`; does nothing when everything is there.
set -euo pipefail

PACKAGES=(slapd ldap-utils memcached redis-server haproxy openssl xmlsec1 libldap2-dev libsasl2-dev prometheus
          chromium postgresql poppler-utils nodejs apache2 libapache2-mod-auth-openidc)
# What each package provides, to tell whether it is already installed without asking dpkg by name
# (a glob where the path holds a version: Debian's PostgreSQL server lives in /usr/lib/postgresql/<major>).
CHECKS=(/usr/sbin/slapd /usr/bin/ldapsearch /usr/bin/memcached /usr/bin/redis-server /usr/sbin/haproxy
        /usr/bin/openssl /usr/bin/xmlsec1 /usr/include/ldap.h /usr/include/sasl/sasl.h /usr/bin/prometheus
        /usr/bin/chromium '/usr/lib/postgresql/*/bin/postgres' /usr/bin/pdftotext
        /usr/bin/node /usr/sbin/apache2 /usr/lib/apache2/modules/mod_auth_openidc.so)

missing=()
for i in "${!PACKAGES[@]}"; do
  compgen -G "${CHECKS[$i]}" >/dev/null || missing+=("${PACKAGES[$i]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "authbench setup: missing Debian packages: ${missing[*]} — run 'make setup' as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 2
fi
echo "authbench setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null  # another apt (tools.sh beside it in CI) may hold the lock
# policy-rc.d 101: keep the packages' own system services from starting; the lab runs its own.
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >/dev/null
