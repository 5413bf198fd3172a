"""The OIDC authorization code flow with PKCE as a Locust user writes it by hand: HttpUser, requests, BeautifulSoup.

The reference `bench/oidc_cpu.py` holds authbench's generator CPU against. Discovery once per user, then per
task: the authorization request (requests follows the provider's redirects to its login page), the login
form read with BeautifulSoup and posted, any consent form posted, the provider's redirects followed by hand
until the one to the redirect_uri (caught, not followed: nothing listens there), the state checked, and the
code exchanged with the PKCE verifier at the token endpoint (client_secret_basic, or a public client).

Runs on its own too: `OIDC_ISSUER=http://127.0.0.1:PORT locust -f bench/oidc_plain_locust.py --headless -u 4`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import secrets
from urllib.parse import parse_qs, urljoin, urlsplit

from bs4 import BeautifulSoup
from locust import HttpUser, task

ISSUER = os.environ.get("OIDC_ISSUER", "http://127.0.0.1:26950")
CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "rp-basic")
CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
REDIRECT_URI = os.environ.get("OIDC_REDIRECT_URI", "http://127.0.0.1:9/authbench/callback")
ACCOUNTS = int(os.environ.get("OIDC_ACCOUNTS", "200"))  # user000, user001, … with password pw-userNNN
PASSWORD_PREFIX = os.environ.get("OIDC_PASSWORD_PREFIX", "pw-")
MAX_FORMS = 4  # the login form and the consent form
MAX_REDIRECTS = 10

usernames = itertools.cycle(f"user{number:03d}" for number in range(ACCOUNTS))


class CodeFlowUser(HttpUser):
    host = ISSUER

    def on_start(self) -> None:
        self.config = self.client.get("/.well-known/openid-configuration", name="discovery").json()

    @task
    def code_flow(self) -> None:
        self.client.cookies.clear()  # a full login every time
        username = next(usernames)
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        response = self.client.get(self.config["authorization_endpoint"], name="authorize", params={
            "response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT_URI, "scope": "openid",
            "state": state, "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256"})
        location = None
        for _ in range(MAX_FORMS):
            form = BeautifulSoup(response.text, "html.parser").find("form")
            if form is None:
                self._fail("no form on the page", response)
                return
            data = {field["name"]: field.get("value", "") for field in form.find_all("input") if field.get("name")}
            if "password" in data:
                data.update(username=username, password=PASSWORD_PREFIX + username)
                name = "login"
            else:
                button = form.find("button", attrs={"name": True})
                if button is not None:
                    data[button["name"]] = button.get("value", "")
                name = "consent"
            response = self.client.post(urljoin(response.url, form["action"]), data=data, name=name,
                                        allow_redirects=False)
            for _ in range(MAX_REDIRECTS):  # follow the provider's redirects, not the one to the RP
                if not response.is_redirect:
                    break
                location = urljoin(response.url, response.headers["Location"])
                if location.startswith(REDIRECT_URI):
                    break
                response = self.client.get(location, name="redirect", allow_redirects=False)
            if location and location.startswith(REDIRECT_URI):
                break
        else:
            self._fail("never redirected to the redirect_uri", response)
            return
        answer = parse_qs(urlsplit(location).query)
        if answer.get("state") != [state] or "code" not in answer:
            self._fail(f"bad redirect: {sorted(answer)}", response)
            return
        data = {"grant_type": "authorization_code", "code": answer["code"][0], "redirect_uri": REDIRECT_URI,
                "code_verifier": verifier}
        if CLIENT_SECRET:
            auth = (CLIENT_ID, CLIENT_SECRET)
        else:
            auth, data["client_id"] = None, CLIENT_ID
        with self.client.post(self.config["token_endpoint"], data=data, auth=auth, name="token",
                              catch_response=True) as token:
            if token.status_code != 200 or "access_token" not in token.json():
                token.failure(f"token endpoint: {token.status_code}")

    def _fail(self, why: str, response) -> None:
        self.environment.events.request.fire(request_type="FLOW", name="code flow", response_time=0,
                                             response_length=0, exception=Exception(why), context={},
                                             url=response.url)
