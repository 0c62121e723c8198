CREATE TABLE "engine_scaling" (
	"deployment" text NOT NULL,
	"engine" text NOT NULL,
	"desired" integer NOT NULL,
	"holder" text,
	"lease_expires_at" timestamp with time zone,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "engine_scaling_pkey" PRIMARY KEY("deployment","engine"),
	CONSTRAINT "engine_scaling_desired_check" CHECK ("engine_scaling"."desired" >= 0)
);
