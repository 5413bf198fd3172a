"""The open model: journeys started at target arrival rates, measured without coordinated omission.

Patterns (`patterns.py`) are a closed model — N users, each starting its next journey when the last
one ends — so a slow server slows the load down and hides its queue. Here every journey has an
intended start from a schedule, whatever the server does; its response time is counted from that
intended start, its service time from the actual send. `rates` parses rates, levels and SLOs,
`schedule` makes the intended starts, `driver` runs one level, `runner` a plan of levels,
`capacity` the maximum-capacity search.
"""
