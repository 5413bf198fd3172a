from authbench.cli import main

raise SystemExit(main())
