from collkit.cli import main

raise SystemExit(main())
