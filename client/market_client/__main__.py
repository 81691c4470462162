from market_client.cli import main

raise SystemExit(main())
