#!/bin/sh
# The real Shibboleth SP in one container: shibd (SAML processing) and Apache with mod_shib in front,
# both reading the files the init service wrote into the shared volume ($SP_DIR). Ends when either ends.
set -eu
SP_DIR=${SP_DIR:-/lab/shibboleth-sp}
for file in shibboleth2.xml apache.conf; do
  [ -s "$SP_DIR/$file" ] || { echo "authbench-sp: $SP_DIR/$file is missing: run the init service first" >&2; exit 2; }
done
# shibd reads its keys as _shibd; Apache's mod_shib talks to shibd over the socket in /run/shibboleth
mkdir -p /run/shibboleth /var/cache/shibboleth /var/log/shibboleth
chown _shibd /run/shibboleth /var/cache/shibboleth /var/log/shibboleth
install -o _shibd -g _shibd -m 600 "$SP_DIR/signing.key" /etc/shibboleth/sp-key.pem
install -o _shibd -g _shibd -m 644 "$SP_DIR/signing.crt" /etc/shibboleth/sp-cert.pem
: > /etc/apache2/ports.conf   # only the port apache.conf names
if [ "${1:-}" = check ]; then exec shibd -t -c "$SP_DIR/shibboleth2.xml"; fi
shibd -F -f -c "$SP_DIR/shibboleth2.xml" -u _shibd -g _shibd &
SHIBD=$!
ln -sf "$SP_DIR/apache.conf" /etc/apache2/sites-enabled/authbench-sp.conf
apache2ctl -D FOREGROUND &
APACHE=$!
trap 'kill $APACHE $SHIBD 2>/dev/null' TERM INT
# whichever of the two ends first ends the container (compose then shows it as exited)
while kill -0 $SHIBD 2>/dev/null && kill -0 $APACHE 2>/dev/null; do sleep 1; done
kill $APACHE $SHIBD 2>/dev/null || true
wait
