--
-- pg_tracer_kernel: the kernel probe sets' SQL with no helper running:
-- every view answers empty (not an error), arguments are validated.
--
CREATE EXTENSION IF NOT EXISTS pg_tracer;

SELECT count(*) FROM pg_tracer_kernel_io;
SELECT count(*) FROM pg_tracer_kernel_cache;
SELECT count(*) FROM pg_tracer_kernel_sched;
SELECT count(*) FROM pg_tracer_kernel_memory;
SELECT count(*) FROM pg_tracer_kernel_net;
SELECT count(*) FROM pg_tracer_kernel_histogram('block');
SELECT count(*) FROM pg_tracer_kernel_histogram('runq');
SELECT count(*) FROM pg_tracer_kernel_histogram('fsync');

-- join keys
SELECT count(*) FROM pg_tracer_kernel_io k JOIN pg_stat_activity a USING (pid);

-- bad arguments: clear errors with hints
SELECT * FROM pg_tracer_kernel_histogram('disk');
SELECT * FROM pg_tracer_kernel_histogram(NULL);
SELECT * FROM pg_tracer_kernel_proc('cpu');

-- the columns the views promise
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_io'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_sched'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_memory'::regclass AND attnum > 0 ORDER BY attnum;
SELECT attname FROM pg_attribute
 WHERE attrelid = 'pg_tracer_kernel_net'::regclass AND attnum > 0 ORDER BY attnum;
