# authbench in a container: the default target runs `authbench` (a master, a worker, a headless run, the
# web UI); the `lab` target adds the Debian servers of the embedded lab, so the lab can run in a pod; `sp` and
# `keycloak` are compose.yaml's real Shibboleth SP and Keycloak nodes.
#   docker build -t authbench .                    # BASE_IMAGE defaults to the official Python image
#   docker build --target lab -t authbench-lab .
# Where no image registry is reachable, build a Debian base with python3, python3-venv and
# ca-certificates (deploy/k8s/base-image.sh does it with mmdebstrap) and pass --build-arg BASE_IMAGE=...
# The base must be Debian 12 (bookworm) with Python 3.11: the Debian package names below are bookworm's.
ARG BASE_IMAGE=python:3.11-slim-bookworm

# -- build: compile what has no wheel (python-ldap), build authbench's wheel, install both into a venv
FROM ${BASE_IMAGE} AS build
# PIP_CERT: the system bundle, so a CA added to the base (a TLS-inspecting proxy's) is trusted by pip too
ENV DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
# Debian's own python3 (a Debian base) needs python3-dev for the headers; the official image has them.
RUN headers=$(python3 -c 'import sys; print("python3-dev" if sys.prefix == "/usr" else "")') \
    && apt-get update -q && apt-get install -y -q --no-install-recommends gcc libc6-dev libldap2-dev libsasl2-dev $headers \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/authbench && /opt/authbench/bin/pip install -q --upgrade "setuptools>=68" wheel
# requirements.txt pins the versions the tests ran with; as constraints it adds no test tools
COPY requirements.txt pyproject.toml /src/
COPY lib /src/lib
COPY deploy/lab /src/deploy/lab
RUN /opt/authbench/bin/pip wheel -q --no-deps --no-build-isolation -w /src/dist /src \
    && /opt/authbench/bin/pip install -q --constraint /src/requirements.txt /src/dist/authbench-*.whl \
    && /opt/authbench/bin/authbench --version

# -- runtime: what authbench's venv needs to run, without compilers; a non-root user
FROM ${BASE_IMAGE} AS runtime
ENV DEBIAN_FRONTEND=noninteractive PATH=/opt/authbench/bin:$PATH PYTHONUNBUFFERED=1 HOME=/home/authbench
RUN apt-get update -q && apt-get install -y -q --no-install-recommends libldap-2.5-0 libsasl2-2 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --user-group --create-home --home-dir /home/authbench authbench \
    && mkdir -p /results && chown authbench:authbench /results

# -- app: the runtime with authbench
FROM runtime AS app
COPY --from=build /opt/authbench /opt/authbench
USER 10001:10001
WORKDIR /home/authbench
ENTRYPOINT ["authbench"]
CMD ["--help"]

# -- lab: the app plus slapd, memcached, Redis, HAProxy and PostgreSQL (their packages' own services never start;
# the lab makes PostgreSQL's data directory itself, so the package's default cluster is removed);
# /lab and /lab-public are compose.yaml's volumes, owned by the user that writes them
FROM app AS lab
USER root
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update -q && apt-get install -y -q --no-install-recommends \
        slapd ldap-utils memcached redis-server haproxy postgresql \
    && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d /var/lib/postgresql/*/main /etc/postgresql/*/main \
    && mkdir -p /lab /lab-public && chown 10001:10001 /lab /lab-public
USER 10001:10001

# -- sp: the real Shibboleth SP (Debian's Apache + mod_shib + shibd) for compose.yaml; its configuration,
# keys and the IdP's metadata are written at `up` into a volume by the init service, never baked in here.
FROM ${BASE_IMAGE} AS sp
ENV DEBIAN_FRONTEND=noninteractive
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get update -q && apt-get install -y -q --no-install-recommends \
        apache2 libapache2-mod-shib shibboleth-sp-utils \
    && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
    && a2enmod -q shib >/dev/null && a2dissite -q 000-default >/dev/null \
    && a2disconf -q other-vhosts-access-log serve-cgi-bin >/dev/null
COPY deploy/compose/sp/run.sh /usr/local/bin/authbench-sp
ENTRYPOINT ["/usr/local/bin/authbench-sp"]

# -- keycloak: Keycloak's nodes for compose.yaml's `keycloak` profile. Java 17 from Debian; the dist fetched at build
# time from Maven Central, checked against the SHA-1 published beside it and built (`kc.sh build`, once per option
# set the designs need) by the lab's own installer, which then drops the zip and the unbuilt tree. authbench comes
# last, so a change to its code does not fetch and build Keycloak again. No key, password or realm: `init keycloak`
# writes them into the volume at `up`.
FROM runtime AS keycloak
ENV AUTHBENCH_TOOLS_CACHE=/opt/keycloak
# openjdk's postinst links its man pages: a minimal base has no man1 folder
RUN mkdir -p /usr/share/man/man1 && apt-get update -q \
    && apt-get install -y -q --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
COPY deploy/lab/authbench_lab/keycloak/install.py /opt/keycloak/install.py
RUN python3 /opt/keycloak/install.py && rm /opt/keycloak/install.py
COPY --from=build /opt/authbench /opt/authbench
USER 10001:10001
WORKDIR /home/authbench

# -- the default target
FROM app AS authbench
