-- Reserved for replay (issue 6): the replay engineer replaces this
-- placeholder with the rebuilds table.
SELECT 1;
