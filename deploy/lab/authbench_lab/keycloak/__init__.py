"""Real Keycloak in the lab: installed from Maven Central once, two nodes behind the lab's HAProxy."""
