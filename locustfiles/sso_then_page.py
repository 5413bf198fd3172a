"""Your own journey, worked example: SAML SSO, then a second call to a page the SP protects.

    authbench run -f locustfiles/sso_then_page.py --target lab:stateless --pattern 2x20

It logs in through the SP at --target (any SP, any IdP: the walk recognises pages by what they hold),
then asks the SP for the protected page again with the session it just got. An SP that sends the user
back to the IdP, or answers with an error, fails the journey with this file's own reason. Every request
is a step in Locust's statistics, and a failed journey keeps its trail and last page (redacted) as
evidence under results/<id>/failures/. docs/custom-journeys.md explains each part.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from authbench import (
    Evidence,
    FastBrowser,
    JourneyOutcome,
    JourneyUser,
    Page,
    Trail,
    redact_page,
    sso_login,
)

PAGE_REFUSED = "protected page refused after SSO"  # this journey's own failure reason
SECOND_CALL = "SP protected page (second call)"  # its step name in the statistics


class SSOThenPage(JourneyUser):
    journey_name = "SSO then page"  # the whole journey's entry in Locust's statistics
    request_type = "JOURNEY"

    def on_start(self) -> None:
        super().on_start()
        self.trail = Trail()

        def hop(name: str, method: str, url: str, status: int, elapsed_ms: float, length: int, exc) -> None:
            self.trail.hops.append((name, method, url, status, exc))
            self.report_request(name, method, url, status, elapsed_ms, length, exc)

        self.browser = FastBrowser(verify=self.settings.verify, timeout=self.settings.timeout, on_request=hop)

    def on_stop(self) -> None:
        self.browser.close_connections()

    def journey(self) -> JourneyOutcome:
        settings = self.settings
        account = settings.accounts.pick()
        self.browser.clear_cookies()  # a full login every time
        self.trail.clear()
        login = sso_login(self.browser, settings.target, account.username, account.password,
                          fields=settings.fields, rule=settings.rule)
        if not login.ok:
            return self.failed(login.reason, login.detail, account, login.page)
        page = self.browser.get(settings.target, name=SECOND_CALL)
        if not self.still_logged_in(page):
            return self.failed(PAGE_REFUSED, f"{page.status} {page.title!r} at {page.url.split('?')[0]}",
                               account, page)
        return JourneyOutcome(True, account=account.username)

    def still_logged_in(self, page: Page) -> bool:
        """Served by the SP itself (not sent back to the IdP), successfully, and not a login form."""
        same_sp = urlsplit(page.url).netloc == urlsplit(self.settings.target).netloc
        login_form = any(form.password_fields for form in page.forms())
        return same_sp and 200 <= page.status < 300 and not login_form

    def failed(self, reason: str, detail: str, account, page: Page | None) -> JourneyOutcome:
        outcome = JourneyOutcome(False, reason, detail, account.username, step=self.trail.last_step)
        if self.run_context.failures.wants(reason):  # keep a few examples per reason, never a secret
            cookies = [cookie.value for _host, cookie in self.browser.cookies]
            html = redact_page(page.text, [account.password], cookies) if page is not None else ""
            outcome.evidence = Evidence(reason, detail, account.username, self.trail.lines(login_pages(page)), html,
                                        page.url.split("?")[0] if page is not None else "")
        return outcome


def login_pages(page: Page | None) -> list[str]:
    return [page.title] if page is not None else []
