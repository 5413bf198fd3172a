#!/bin/sh
# One Shibboleth IdP node of compose.yaml's `shibboleth` profile:
#   authbench-shib-idp keys     (shib-init) the shared data-sealer keystore, once, into the volume
#   authbench-shib-idp node a   (shib-idp-a) configure from the volume and run Tomcat in the foreground
# SHIB_STORAGE=client|memcached|jdbc picks the overlay. /lab/idp.env (written by the lab's init) names the
# entity ID, the node ports, LDAP and the files of the cluster's shared keys.
set -eu
IDP_HOME=${IDP_HOME:-/opt/shibboleth-idp}
SHARED=/lab/shibboleth-idp
[ -s /lab/idp.env ] || { echo "authbench-shib-idp: /lab/idp.env is missing: run the init service first" >&2; exit 2; }
. /lab/idp.env

case "${1:-}" in
keys)
  mkdir -p "$SHARED"
  if [ ! -s "$SHARED/sealer.jks" ]; then
    umask 077
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$SHARED/sealer.password"
    # one key version, never rotated: both nodes and restarts keep reading the same sealed cookies
    "$IDP_HOME/bin/seckeygen.sh" --storefile "$SHARED/sealer.jks" --storepass "$(cat "$SHARED/sealer.password")" \
      --versionfile "$SHARED/sealer.kver" --alias secret >/dev/null
  fi
  exit 0 ;;
node) NODE=${2:?node a or b} ;;
*) echo "authbench-shib-idp: usage: keys | node a|b" >&2; exit 2 ;;
esac

case "${SHIB_STORAGE:-client}" in
  client|memcached|jdbc) ;;
  *) echo "authbench-shib-idp: SHIB_STORAGE must be client, memcached or jdbc, got $SHIB_STORAGE" >&2; exit 2 ;;
esac
[ "$NODE" = a ] && PORT=$IDP_A_PORT || PORT=$IDP_B_PORT
cp /opt/authbench-shib/conf/metadata-providers.xml /opt/authbench-shib/overlays/"$SHIB_STORAGE"/global.xml \
  "$IDP_HOME/conf/"
{ cat /opt/authbench-shib/conf/idp.properties.add
  echo "idp.entityID = $ENTITY_ID"
  echo "idp.scope = $SCOPE"
  cat /opt/authbench-shib/overlays/"$SHIB_STORAGE"/storage.properties
} >> "$IDP_HOME/conf/idp.properties"
{ cat /opt/authbench-shib/conf/ldap.properties.add
  echo "idp.authn.LDAP.ldapURL = $LDAP_URL"
  echo "idp.authn.LDAP.baseDN = $LDAP_BASE"
  echo "idp.authn.LDAP.bindDN = $LDAP_BIND_DN"
} >> "$IDP_HOME/conf/ldap.properties"
# HAProxy's health checks reach /idp/status from another container of the internal network
sed -i "s|'127.0.0.1/32'|'0.0.0.0/0'|" "$IDP_HOME/conf/access-control.xml"
sed -i "s|@SP_METADATA@|$SP_METADATA|" "$IDP_HOME/conf/metadata-providers.xml"
sed -i "s|@MEMCACHED@|$MEMCACHED|; s|@POSTGRES_URL@|${POSTGRES_URL:-}|" "$IDP_HOME/conf/global.xml"
# the cluster's shared keys (the same signing key the SP's metadata names) and secrets, never in the image
ln -sf "$SIGNING_KEY" "$IDP_HOME/credentials/idp-signing.key"
ln -sf "$SIGNING_CERT" "$IDP_HOME/credentials/idp-signing.crt"
ln -sf "$SHARED/sealer.jks" "$IDP_HOME/credentials/sealer.jks"
ln -sf "$SHARED/sealer.kver" "$IDP_HOME/credentials/sealer.kver"
umask 077
{ echo "idp.sealer.storePassword = $(cat "$SHARED/sealer.password")"
  echo "idp.sealer.keyPassword = $(cat "$SHARED/sealer.password")"
  echo "idp.authn.LDAP.bindDNCredential = $(cat "$LDAP_PASSWORD_FILE")"
  [ -z "${POSTGRES_PASSWORD_FILE:-}" ] || echo "authbench.jdbc.password = $(cat "$POSTGRES_PASSWORD_FILE")"
} > "$IDP_HOME/credentials/secrets.properties"
sed -i "s/port=\"8080\"/port=\"$PORT\"/" /usr/local/tomcat/conf/server.xml
exec catalina.sh run
