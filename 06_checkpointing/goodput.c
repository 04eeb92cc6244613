/* goodput.c: 06_checkpointing/ckpt --goodput-model: Daly's goodput of a
 * checkpoint interval from failure.h's formulas, printed as CSV (trainer.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "trainer.h"

void ckpt_goodput_model(const char *s) {
    double delta, mtbf, restart, tau;
    const arg_t field[4] = {   /* each a finite number, checked as a flag's value */
        {"goodput-model DELTA", ARG_DOUBLE, &delta, NULL, NULL, 0, 0},
        {"goodput-model MTBF", ARG_DOUBLE, &mtbf, NULL, NULL, 0, 0},
        {"goodput-model RESTART", ARG_DOUBLE, &restart, NULL, NULL, 0, 0},
        {"goodput-model TAU", ARG_DOUBLE, &tau, NULL, NULL, 0, 0},
    };
    char buf[256], *rest = buf, *tok;
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    while ((tok = strsep(&rest, ",")) != NULL) {
        if (n == 4 || strlen(s) >= sizeof buf) { n = 5; break; }
        args_set(&field[n++], tok);
    }
    if (n < 3 || n > 4 || !(delta > 0) || !(mtbf > 0) || !(restart >= 0) || (n == 4 && !(tau > 0)))
        usage_error("--goodput-model %s: want DELTA,MTBF,RESTART[,TAU] in seconds (DELTA, MTBF and TAU "
                    "above 0, RESTART 0 or more), like 0.1,10,1.5", s);
    if (n == 4) {
        printf("%.6g,%.6g\n", tau, daly_goodput(tau, delta, restart, mtbf));
        return;
    }
    double ty = young_interval(delta, mtbf), td = daly_interval(delta, mtbf);
    printf("# checkpoint cost %g s, mean time between failures %g s, restart %g s\n", delta, mtbf, restart);
    printf("# young %.6g s (goodput %.6g), daly %.6g s (goodput %.6g)\n", ty,
           daly_goodput(ty, delta, restart, mtbf), td, daly_goodput(td, delta, restart, mtbf));
    printf("interval_s,goodput\n");
    for (int i = 0; i <= 80; i++) {   /* from tau_Young / 30 to 30 tau_Young */
        double t = ty * pow(30.0, (i - 40) / 40.0);
        printf("%.6g,%.6g\n", t, daly_goodput(t, delta, restart, mtbf));
    }
}
